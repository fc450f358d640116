// The Passnote sync engine (the Passnote protocol): the connection handshake with version negotiation and inst
// tokens, hello / state / poke, deltas of at most 500 whole records with the clock bound, range
// reconciliation, an ordered send window per peer and one-at-a-time inbound handling per peer.
// It does no I/O: the caller gives it a `transmit` function and feeds it transport events.
//
// Two modes. With a device identity (the Passnote protocol's default) there are three channels: plain frames
// (kind 0x00, under the roster key) carry only handshake, ratchet-hello, hello, poke and the
// roster collection's state, delta and reconcile; everything about user collections travels in
// ratcheted frames (kind 0x01) inside a session opened with a non-revoked roster member
// (session.ts); the roster's records are accepted only when signed by the group's owner
// (roster.ts). Without an identity every frame is sealed under the passphrase key (seal.ts).
//
// This file is the engine's face: transport events, the application's writes, and the inbound
// path (open the layers, check the channel's scope, dispatch). The parts it composes:
//   engine-core.ts   shared state, channels, sealing and the send window;
//   negotiation.ts   the connection handshake;
//   sessions.ts      ratchet-hello and sessions (identity mode);
//   anti-entropy.ts  hello / state / delta / poke / reconcile / reconcile2.
// Local writes are pushed to every agreed peer as deltas, the writes of one event-loop turn together.
import { equalBytes } from "../../../shared/encoding";
import type { Value } from "./codec";
import { EngineCore, type Channel, type PeerState, type SyncEngineOptions, type SyncEvents, type TrafficStats } from "./engine-core";
import { onDelta, onHello, onPoke, onReconcile, onReconcile2, onState } from "./anti-entropy";
import type { HlcClock } from "./hlc";
import { onHandshake, usesDigest } from "./negotiation";
import { channelDigest, onDigest } from "./digest";
import { checkLocalWrite, type PassnoteStore } from "./records";
import { ROSTER_COLLECTION, signRosterRecord, type RosterEntry } from "./roster";
import { KIND_PLAIN, KIND_RATCHET, openFrame, openPlain } from "./seal";
import { forgetEphemerals, isMember, onRatchetHello, openAnswered, repairSession, requestRehello, rosterChanged } from "./sessions";
import { decodeMessage, type Message, type WireRecord } from "./wire";

export type { SyncEngineOptions } from "./engine-core";
export { ListenerError, StoreFailedError } from "./engine-core";

export class SyncEngine {
  /** The state the engine's parts share (peers, store, clock, channels). */
  readonly core: EngineCore;

  constructor(opts: SyncEngineOptions) {
    this.core = new EngineCore(opts);
    // The founding device lists itself: the roster's first record, signed by its own key.
    const id = this.core.identity;
    if (this.isOwner && !this.rosterEntry(id!.deviceId)) {
      this.core.merge(ROSTER_COLLECTION, signRosterRecord(id!.deviceKey, id!.pub, false, this.clock.tick()));
    }
  }

  get node(): string {
    return this.core.node;
  }
  get store(): PassnoteStore {
    return this.core.store;
  }
  get clock(): HlcClock {
    return this.core.clock;
  }
  get inst(): string {
    return this.core.inst;
  }
  get sent(): TrafficStats {
    return this.core.sent;
  }
  get received(): TrafficStats {
    return this.core.received;
  }

  /** Identity mode: this device's id (hex of SHA-256(public key), 16 bytes). */
  get deviceId(): string | undefined {
    return this.core.identity?.deviceId;
  }

  /** Identity mode: whether this device is the group's owner (it signs the roster). */
  get isOwner(): boolean {
    const id = this.core.identity;
    return !!id && equalBytes(id.pub, id.group.owner);
  }

  on<K extends keyof SyncEvents>(event: K, fn: SyncEvents[K]): () => void {
    return this.core.on(event, fn);
  }

  // ---- transport events ------------------------------------------------------------------------

  /** A transport peer appeared (or was present when we joined): send our handshake. */
  peerJoined(peer: string): void {
    if (this.core.failure) return; // the store failed: this engine syncs no more
    this.peerLeft(peer);
    const state = this.core.fresh(peer);
    this.core.peers.set(peer, state);
    this.core.sendHandshake(peer, state);
  }

  /** A transport peer was lost: drop everything held for it. */
  peerLeft(peer: string): void {
    const state = this.core.peers.get(peer);
    if (!state) return;
    state.window.close();
    forgetEphemerals(state); // an unused ephemeral secret is wiped, not just dropped
    this.core.peers.delete(peer);
  }

  /** A transport message from a peer; handled one at a time, in arrival order, per peer. */
  receive(peer: string, bytes: Uint8Array): Promise<void> {
    if (this.core.failure) return Promise.resolve();
    let state = this.core.peers.get(peer);
    if (!state) {
      // A frame from a peer the transport has not announced (yet): treat it as present.
      this.peerJoined(peer);
      state = this.core.peers.get(peer)!;
    }
    // A frame whose handling threw is reported (`error`), never left to become an unhandled
    // rejection; a store failure has stopped the engine by then (StoreFailedError).
    const run = state.inbound.then(() => this.handle(peer, bytes)).catch((e: unknown) => this.core.handlerFailed(e));
    state.inbound = run;
    return run;
  }

  /** Stops: no more frames leave. */
  close(): void {
    for (const peer of [...this.core.peers.keys()]) this.peerLeft(peer);
  }

  // ---- application ------------------------------------------------------------------------------

  /**
   * Writes a record. Refused with WriteRefusedError, before anything is stored, when a peer could
   * not read it exactly (checkLocalWrite: names over max_name_bytes, lone surrogates, a record
   * over record_max_bytes).
   */
  put(collection: string, key: string, value: Value, crdtType?: string): WireRecord {
    this.userCollection(collection);
    return this.write(collection, { key, value, is_deleted: false, hlc: this.clock.tick(), ...(crdtType ? { crdt_type: crdtType } : {}) });
  }

  delete(collection: string, key: string): WireRecord {
    this.userCollection(collection);
    return this.write(collection, { key, value: null, is_deleted: true, hlc: this.clock.tick() });
  }

  /** Identity mode, owner only: admits a device (by its Ed25519 public key) to the roster. */
  admit(pub: Uint8Array): WireRecord {
    if (!this.isOwner) throw new Error("only the group's owner signs roster records");
    return this.write(ROSTER_COLLECTION, signRosterRecord(this.core.identity!.deviceKey, pub, false, this.clock.tick()));
  }

  /** Identity mode, owner only: revokes a device. Its sessions end; it gets no user data again. */
  revoke(device: string): WireRecord {
    const entry = this.rosterEntry(device);
    if (!this.isOwner || !entry) throw new Error("only the group's owner revokes, and only a listed device");
    if (device === this.core.identity!.deviceId) throw new Error("the owner cannot revoke itself: found a new group instead");
    return this.write(ROSTER_COLLECTION, signRosterRecord(this.core.identity!.deviceKey, entry.pub, true, this.clock.tick()));
  }

  /** Identity mode: the roster entry of a device (null when it is not listed). */
  rosterEntry(device: string): RosterEntry | null {
    return this.core.rosterEntry(device);
  }

  /**
   * The pull half of forceSync: ask every agreed peer for a hello, and send ours. A pair that
   * cannot sync heals here too: a peer we have not heard from since we agreed gets our handshake
   * again (ours may have been lost), and in identity mode a peer without a session whose hello
   * we have waited a whole rehello interval for is asked to re-send it (repairSession).
   */
  forceSync(): void {
    for (const [peer, s] of this.core.peers) {
      if (s.version === undefined) continue;
      this.heal(peer, s, false);
      for (const ch of this.core.identity
        ? s.session
          ? (["plain", "session"] as const)
          : (["plain"] as const)
        : (["passphrase"] as const)) {
        void this.core.send(peer, { type: "hello", node: this.node }, ch);
        void this.core.send(peer, { type: "poke" }, ch);
      }
    }
  }

  /**
   * The periodic anti-entropy pass (the reference peer runs it every anti_entropy_interval_ms).
   * Its cost does not grow with collections that did not change: to a peer that offers
   * x-edge-relay/digest it sends one digest per channel (digest.ts), and the peer asks for our
   * state only where its own digest differs; to any other peer one hello per channel (its own
   * pass pulls the other way). The roster's plain channel always gets a hello (one collection).
   * A stalled pair heals here as in forceSync.
   */
  antiEntropyPass(): void {
    const core = this.core;
    for (const [peer, s] of core.peers) {
      if (s.version === undefined || s.incompatible) continue;
      this.heal(peer, s, false);
      for (const ch of core.identity ? (s.session ? (["plain", "session"] as const) : (["plain"] as const)) : (["passphrase"] as const)) {
        if (ch !== "plain" && usesDigest(core, s)) void core.send(peer, { type: "digest", digest: channelDigest(core, ch) }, ch);
        else void core.send(peer, { type: "hello", node: this.node }, ch);
      }
    }
  }

  /**
   * Anti-entropy after a loss the transport reported (a refused frame: the relay does not say
   * which): a peer we have not agreed with yet gets our handshake again while the connection's
   * two allow it (a peer that agreed ignores it, one that lost ours agrees now), a peer without a
   * session is asked for a fresh hello, and every agreed peer gets forceSync's hello and poke, so
   * reconciliation re-ships whatever the lost frame carried.
   */
  repair(): void {
    for (const [peer, s] of this.core.peers) {
      s.shipped.clear(); // without recon1: the lost frame may have carried records, so a full pass
      if (s.incompatible) continue;
      if (s.version === undefined) this.core.sendHandshake(peer, s);
      repairSession(this.core, peer, s, true);
    }
    this.forceSync();
  }

  /**
   * A peer without a session is repaired (repairSession). A peer we have not heard from since
   * agreeing may have lost our handshakes: it gets a fresh ratchet-hello at once, and our
   * handshake again only while the connection's two allow it (never: agreeing took our reply).
   * A pair that lost every handshake agrees when it next meets (the transport reconnects, or a
   * peer restarts with a new inst token).
   */
  private heal(peer: string, s: PeerState, force: boolean): void {
    if (s.incompatible) return;
    if (s.heard) {
      repairSession(this.core, peer, s, force);
      return;
    }
    this.core.sendHandshake(peer, s);
    repairSession(this.core, peer, s, true);
  }

  /**
   * Asks an agreed peer for its state in every channel it syncs in, probing only collections
   * whose watermarks differ (whenSynced): the `state` events that answer say how it stands.
   */
  askState(peer: string): void {
    const s = this.core.peers.get(peer);
    if (!s || s.version === undefined || s.incompatible) return;
    for (const ch of this.channelsWith(s)) {
      void this.core.send(peer, { type: "hello", node: this.node }, ch);
      s.askHello.add(ch);
    }
  }

  /** The channels this side syncs in with a peer now. */
  channelsWith(s: PeerState): Channel[] {
    return this.core.identity ? (s.session ? ["plain", "session"] : ["plain"]) : ["passphrase"];
  }

  /** Identity mode: peers with an open session (the only ones that get user data). */
  sessionPeers(): string[] {
    return [...this.core.peers].filter(([, s]) => s.session).map(([p]) => p);
  }

  /** Peers with an agreed version. */
  agreedPeers(): string[] {
    return [...this.core.peers].filter(([, s]) => s.version !== undefined).map(([p]) => p);
  }

  peerInfo(peer: string):
    | {
        version?: number;
        incompatible: boolean;
        node?: string;
        capabilities: string[];
        session: boolean;
        device?: string;
        held: boolean;
        ephemeralSecretWiped: boolean;
      }
    | undefined {
    const s = this.core.peers.get(peer);
    return (
      s && {
        version: s.version,
        incompatible: s.incompatible,
        node: s.node,
        capabilities: [...s.caps],
        session: !!s.session,
        device: s.peerDevice,
        held: !!s.held,
        ephemeralSecretWiped: !!s.mine && !s.mine.secret,
      }
    );
  }

  /** Frames queued or in flight to all peers, paced work included (0 when every window has drained). */
  pendingFrames(): number {
    let n = 0;
    for (const s of this.core.peers.values()) n += s.window.pending + s.paced.length;
    return n;
  }

  /** Resolves when every peer's inbound queue is empty and no shipment waits for its records to be read. */
  async idle(): Promise<void> {
    await Promise.all(
      [...this.core.peers.values()].map(async (s) => {
        await s.inbound;
        await s.outbox.idle();
      }),
    );
  }

  // ---- local writes -----------------------------------------------------------------------------

  private userCollection(collection: string): void {
    if (this.core.identity && collection === ROSTER_COLLECTION)
      throw new Error(`${ROSTER_COLLECTION} is the roster: use admit() and revoke()`);
  }

  /**
   * Stores a local write and queues it for every agreed peer. Writes made in one turn of the event
   * loop leave together (one delta per collection, split at 500 records), so a burst of writes
   * costs a few frames rather than one each, and stays within the relay's per-peer rate.
   */
  private write(collection: string, record: WireRecord): WireRecord {
    checkLocalWrite(collection, record);
    this.core.merge(collection, record); // a failing store: StoreFailedError, which says what to do
    if (this.core.identity && collection === ROSTER_COLLECTION) rosterChanged(this.core);
    const queued = this.outgoing.get(collection);
    if (queued) queued.set(record.key, record);
    else this.outgoing.set(collection, new Map([[record.key, record]]));
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      queueMicrotask(() => this.flushWrites());
    }
    return record;
  }

  private readonly outgoing = new Map<string, Map<string, WireRecord>>();
  private flushScheduled = false;

  private flushWrites(): void {
    this.flushScheduled = false;
    const batches = [...this.outgoing].map(([collection, recs]) => [collection, [...recs.values()]] as const);
    this.outgoing.clear();
    for (const [peer, s] of this.core.peers) {
      if (s.version === undefined || s.incompatible) continue;
      for (const [collection, records] of batches) {
        const ch = this.core.channelOf(collection);
        if (ch === "session" && !s.session) continue; // user data only inside a session
        void this.core.sendDelta(peer, collection, records, ch);
      }
    }
  }

  // ---- inbound ----------------------------------------------------------------------------------

  private async handle(peer: string, bytes: Uint8Array): Promise<void> {
    const core = this.core;
    const state = core.peers.get(peer);
    if (!state || core.failure) return;
    const opened = this.open(peer, state, bytes);
    if (!opened) return; // fails authentication at some layer: dropped silently
    const { frame, ch } = opened;
    const m = decodeMessage(frame);
    if (!m) return core.emit("dropped", peer, "malformed");
    core.received.frames[m.type] = (core.received.frames[m.type] ?? 0) + 1;
    core.received.bytes += bytes.length;
    if (!this.allowed(m, ch)) return core.emit("dropped", peer, "out-of-scope");
    if (m.type === "handshake") return onHandshake(core, peer, state, m);
    if (state.version === undefined || state.incompatible) return; // nothing before agreement
    state.heard = true;
    switch (m.type) {
      case "hello":
        return onHello(core, peer, state, m, ch);
      case "state":
        return onState(core, peer, state, m, ch);
      case "delta":
        return onDelta(core, peer, m);
      case "poke":
        return onPoke(core, peer, ch);
      case "ratchet-hello":
        // Only identity mode lets a ratchet-hello through (allowed()); the passphrase mode ignores it.
        return onRatchetHello(core, peer, state, m);
      case "reconcile":
        return onReconcile(core, peer, m, ch);
      case "reconcile2":
        return onReconcile2(core, peer, state, m, ch);
      case "digest":
        return onDigest(core, peer, state, m, ch);
    }
  }

  /** Removes the layers a frame travelled in: the frame and its channel, or null (dropped). */
  private open(peer: string, state: PeerState, bytes: Uint8Array): { frame: Uint8Array; ch: Channel } | null {
    const core = this.core;
    if (!core.identity) {
      const frame = openFrame(core.opts.key!, bytes);
      if (!frame) core.emit("dropped", peer, "unauthenticated");
      return frame && { frame, ch: "passphrase" };
    }
    if (bytes[0] === KIND_PLAIN) {
      const frame = openPlain(core.identity.group.rosterKey, bytes);
      if (!frame) core.emit("dropped", peer, "unauthenticated");
      return frame && { frame, ch: "plain" };
    }
    if (bytes[0] === KIND_RATCHET) {
      const answered = openAnswered(core, peer, state, bytes);
      if (answered) return { frame: answered, ch: "session" };
      if (!state.session) {
        core.emit("dropped", peer, "no-session");
        // A member seals to a session we do not hold (our hello to it, or its answer to ours, was
        // lost; or ours was re-keyed): ask it to re-send its hello (rate-limited). The member is
        // known by its accepted hello or, before any, by the device key of its handshake. A
        // revoked or unknown device never had a session, so its frames are dropped without a word.
        // A device whose roster record has not arrived yet is asked once it does (rosterChanged).
        if (state.version !== undefined) {
          if (isMember(core, state)) requestRehello(core, peer, state);
          else state.unopened = true;
        }
        return null;
      }
      const r = state.session.open(bytes);
      if (r.status === "ok") return { frame: r.frame, ch: "session" };
      core.emit("dropped", peer, r.status);
      if (r.status === "unopenable") requestRehello(core, peer, state);
      return null;
    }
    core.emit("dropped", peer, "unauthenticated");
    return null;
  }

  /**
   * The plain-frame restriction: a plain frame proves only that its sender holds the roster key,
   * so it may carry handshake, ratchet-hello, hello, poke and the roster's state, delta and
   * reconcile (a state's user-collection entries are ignored by its handler). A session never
   * carries a handshake, a ratchet-hello or the roster.
   */
  private allowed(m: Message, ch: Channel): boolean {
    switch (m.type) {
      case "handshake":
        return ch !== "session";
      case "ratchet-hello":
        return ch === "plain";
      case "digest":
        return ch !== "plain"; // the roster's channel is pulled with hello, as the plain-frame restriction lists
      case "delta":
      case "reconcile":
      case "reconcile2":
        return this.core.inScope(m.collection, ch);
      default:
        return true;
    }
  }
}
