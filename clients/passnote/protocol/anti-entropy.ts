// Anti-entropy as the engine runs it (the Passnote protocol, "Messages", "Clock bound", "Reconciliation
// exchange"): hello asks for state; the receiver of state probes every collection either side
// named (recon2 when both sides offer it, else recon1 on both sides) or, without recon1, ships
// what the peer may lack (a full pass first and when in doubt, then what changed since); delta
// merges under the clock bound (and, for the roster, the owner's signature); reconcile answers
// probes (reconcile.ts), reconcile2 recon2's ranges (reconcile2.ts); poke asks for a hello.
import { PASSNOTE_LIMITS as L } from "../../../shared/limits";
import type { Channel, EngineCore, PeerState } from "./engine-core";
import { compareHlc, hlcWall } from "./hlc";
import { usesRecon, usesRecon2 } from "./negotiation";
import { openingProbe, respondToReconcile } from "./reconcile";
import { openingProbe2, respondToReconcile2 } from "./reconcile2";
import { ROSTER_COLLECTION, verifyRosterRecord } from "./roster";
import { rosterChanged } from "./sessions";
import type { MessageOf, WireRecord } from "./wire";

export function onHello(core: EngineCore, peer: string, state: PeerState, m: MessageOf<"hello">, ch: Channel): void {
  state.node = m.node;
  const watermarks = core.store
    .collectionNames()
    .filter((c) => core.inScope(c, ch))
    .map((collection) => ({ collection, watermark: core.store.watermark(collection) }));
  // Every collection is named, in one state while the watermarks fit state_max_bytes, else in
  // several. Each is a complete state by itself: no convention tells the receiver that more
  // follow, so a peer that reads every state on its own (probing what it names and its own
  // collections) syncs all the same.
  let part: typeof watermarks = [];
  let bytes = 0;
  for (const w of watermarks) {
    const size = w.collection.length * 3 + w.watermark.length + 4;
    if (part.length && bytes + size > L.state_max_bytes) {
      void core.send(peer, { type: "state", watermarks: part }, ch);
      part = [];
      bytes = 0;
    }
    part.push(w);
    bytes += size;
  }
  void core.send(peer, { type: "state", watermarks: part }, ch);
}

export function onState(core: EngineCore, peer: string, state: PeerState, m: MessageOf<"state">, ch: Channel): void {
  // User-collection entries in a plain state are ignored, like any user content in a plain frame.
  const theirs = new Map(m.watermarks.filter((w) => core.inScope(w.collection, ch)).map((w) => [w.collection, w.watermark]));
  // The states that answer one hello of this side may come in several messages; nothing says how
  // many. The first state after this side's hello in the channel probes what it names and this
  // side's own collections; a later one (until this side's next hello in the channel) what it
  // names that was not probed yet, or was probed under another watermark of the peer's.
  let probed = state.stateSeries.get(ch);
  const first = !probed;
  if (!probed) {
    probed = new Map();
    state.stateSeries.set(ch, probed);
  }
  let names = first
    ? [...new Set([...theirs.keys(), ...core.store.collectionNames().filter((c) => core.inScope(c, ch))])]
    : [...theirs.keys()];
  // Answering a digest mismatch: only collections whose watermarks differ may hold the
  // difference, so only those are probed. When none differs, the difference is below the
  // watermarks (an older record one side lacks): every collection is.
  if (state.digestHello.has(ch) || state.askHello.has(ch)) {
    const differ = names.filter((c) => (theirs.get(c) ?? "") !== core.store.watermark(c));
    if (differ.length || state.askHello.has(ch)) names = differ;
  }
  const recon = usesRecon(core, state);
  const recon2 = usesRecon2(core, state);
  for (const collection of names) {
    const watermark = theirs.get(collection) ?? null;
    if (probed.has(collection) && (probed.get(collection) === null || probed.get(collection) === watermark)) continue;
    probed.set(collection, watermark);
    // Paced: each probe (or shipment) is made and queued as the window drains, so a state naming
    // thousands of collections never fills the send queue.
    if (recon2) core.pace(peer, state, () => void core.send(peer, openingProbe2(core.store, collection), ch));
    else if (recon) core.pace(peer, state, () => void core.send(peer, openingProbe(core.store, collection), ch));
    else core.pace(peer, state, () => core.ship(peer, collection, fallbackShipment(core, state, collection, watermark ?? ""), ch));
  }
  core.emit("state", peer, theirs, ch);
}

/**
 * Without recon1: what to ship the peer of one collection. The peer's watermark alone
 * misses older records it lacks (one learnt from a third peer, or written offline with an older
 * clock), so the first pass on a connection is a full one (every record), and so is any pass in
 * doubt: the peer says it holds nothing, or a frame was refused since (repair() forgets the
 * marks). After a full pass, a pass ships what this store took in since the last one (local
 * arrival order, whatever the HLC) and what is newer than the peer's watermark (a record its clock
 * bound refused).
 */
function fallbackShipment(core: EngineCore, state: PeerState, collection: string, watermark: string): string[] {
  const since = state.shipped.get(collection);
  state.shipped.set(collection, core.store.sequence);
  const items = core.store.ordered(collection);
  if (since === undefined || watermark === "") return items.map((e) => e.key);
  return items.filter((e) => e.seq > since || compareHlc(e.hlc, watermark) > 0).map((e) => e.key);
}

export function onDelta(core: EngineCore, peer: string, m: MessageOf<"delta">): void {
  const limit = core.clock.physical() + (core.opts.maxClockDriftMs ?? L.max_clock_drift_ms);
  const roster = !!core.identity && m.collection === ROSTER_COLLECTION;
  const changed: WireRecord[] = [];
  let failed: unknown;
  // The clock bound's document rule (profile): a document is one key of the collection, and a
  // record carries the whole document. A record too far ahead is refused together with every other
  // record of its key in this delta (the rest of its document), and nothing else: the other keys
  // of the delta merge. Anti-entropy offers it again later (the reference peer's periodic pass).
  const refusedKeys = new Set(m.records.filter((r) => hlcWall(r.hlc) > limit).map((r) => r.key));
  for (const r of m.records) {
    if (refusedKeys.has(r.key)) {
      core.emit("refused", m.collection, r, peer);
      continue;
    }
    // Anyone holding the roster key can send roster records: only the owner's signature counts.
    if (roster && !verifyRosterRecord(core.identity!.group.owner, r)) {
      core.emit("dropped", peer, "roster-signature");
      continue;
    }
    let merged: boolean;
    try {
      merged = core.merge(m.collection, r);
    } catch (e) {
      // The store failed (the engine has stopped): what it did keep is still reported, below.
      failed = e;
      break;
    }
    if (merged) {
      core.clock.observe(r.hlc);
      changed.push(r);
    }
  }
  // The protocol's reaction first (sessions with revoked devices end, held hellos are re-checked),
  // then the app hears of the change: nothing a listener does can keep a revoked device in.
  if (roster && changed.length) rosterChanged(core);
  if (changed.length) core.emit("change", m.collection, changed, peer);
  if (failed) throw failed;
}

export function onPoke(core: EngineCore, peer: string, ch: Channel): void {
  void core.send(peer, { type: "hello", node: core.node }, ch);
}

export function onReconcile(core: EngineCore, peer: string, m: MessageOf<"reconcile">, ch: Channel): void {
  const { ship, reply } = respondToReconcile(core.store, m);
  core.ship(peer, m.collection, ship, ch);
  if (reply) void core.send(peer, reply, ch);
}

export function onReconcile2(core: EngineCore, peer: string, state: PeerState, m: MessageOf<"reconcile2">, ch: Channel): void {
  if (!usesRecon2(core, state)) return; // recon2 not agreed with this peer: ignored
  const { ship, reply } = respondToReconcile2(core.store, m);
  core.ship(peer, m.collection, ship, ch);
  if (reply) void core.send(peer, reply, ch);
}
