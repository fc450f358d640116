// The Passnote sync engine without a device identity (seed 001): every frame sealed under the
// passphrase key, the connection handshake with version negotiation and inst tokens, hello /
// state / poke, deltas of at most 500 whole records with the clock bound, range reconciliation,
// an ordered send window per peer and one-at-a-time inbound handling per peer. It does no I/O:
// the caller gives it a `transmit` function and feeds it transport events.
//
// Profile decisions (the seed is silent): after the version is agreed, the side with the lower
// transport peer id sends hello (the pull; both sides do without recon1); the other side can ask
// for it with poke (forceSync).
// The receiver of `state` probes every collection either side named (recon1 on both sides), or,
// without recon1, ships the records newer than the peer's watermark. Local writes are pushed to
// every agreed peer as deltas, the writes of one event-loop turn together.
import { PASSNOTE_LIMITS as L } from "../limits";
import { encodeValue, type Value } from "./codec";
import {
  CAP_RECON,
  InstTokens,
  SUPPORTED_VERSIONS,
  instToken,
  makeHandshake,
  negotiateVersion,
  newInstToken,
} from "./handshake";
import { HlcClock, hlcWall } from "./hlc";
import { MemoryStore } from "./records";
import { openingProbe, respondToReconcile } from "./reconcile";
import { openFrame, sealFrame } from "./seal";
import { SendWindow } from "./send-window";
import { decodeMessage, encodeMessage, type Message, type MessageOf, type MessageType, type WireRecord } from "./wire";

export interface SyncEngineOptions {
  /** This node's id (HLC node part, hello). */
  node: string;
  /** 32-byte passphrase key: the only membership without identities. */
  key: Uint8Array;
  /** Hands one sealed frame to the transport for `peer`; resolves when the transport took it. */
  transmit: (peer: string, bytes: Uint8Array) => Promise<void>;
  /** This side's transport peer id, once known. */
  selfId: () => string | undefined;
  store?: MemoryStore;
  now?: () => number;
  versions?: readonly number[];
  /** Offer recon1 (default true). */
  recon?: boolean;
  /** This instance's inst token (default: a fresh random one). */
  inst?: string;
  maxClockDriftMs?: number;
}

export interface SyncEvents {
  /** The versions do not overlap: the exchange with this peer has ended. */
  incompatible: (peer: string, theirs: number[]) => void;
  /** The version was agreed with a peer. */
  agreed: (peer: string, version: number) => void;
  /** A new inst token from a peer we knew: everything held for it was dropped. */
  restarted: (peer: string) => void;
  /** Records from a peer changed the store. */
  change: (collection: string, records: WireRecord[], from: string) => void;
  /** A delta record was refused by the clock bound. */
  refused: (collection: string, record: WireRecord, from: string) => void;
}

export interface TrafficStats {
  frames: Record<string, number>;
  bytes: number;
}

interface PeerState {
  window: SendWindow;
  inbound: Promise<void>;
  tokens: InstTokens;
  replied: boolean;
  version?: number;
  caps: Set<string>;
  incompatible: boolean;
  node?: string;
}

const emptyStats = (): TrafficStats => ({ frames: {}, bytes: 0 });

export class SyncEngine {
  readonly node: string;
  readonly store: MemoryStore;
  readonly clock: HlcClock;
  readonly inst: string;
  readonly sent: TrafficStats = emptyStats();
  readonly received: TrafficStats = emptyStats();
  private readonly peersState = new Map<string, PeerState>();
  private readonly listeners = new Map<keyof SyncEvents, Set<(...args: any[]) => void>>();
  private readonly versions: readonly number[];

  constructor(private readonly opts: SyncEngineOptions) {
    if (opts.key.length !== 32) throw new Error("the passphrase key is 32 bytes");
    this.node = opts.node;
    this.store = opts.store ?? new MemoryStore();
    this.clock = new HlcClock(opts.node, opts.now);
    this.inst = opts.inst ?? newInstToken();
    this.versions = opts.versions ?? SUPPORTED_VERSIONS;
  }

  on<K extends keyof SyncEvents>(event: K, fn: SyncEvents[K]): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(fn);
    return () => set.delete(fn);
  }

  private emit<K extends keyof SyncEvents>(event: K, ...args: Parameters<SyncEvents[K]>): void {
    for (const fn of this.listeners.get(event) ?? []) fn(...args);
  }

  // ---- transport events ------------------------------------------------------------------------

  /** A transport peer appeared (or was present when we joined): send our handshake. */
  peerJoined(peer: string): void {
    this.peerLeft(peer);
    const state = this.fresh(peer);
    this.peersState.set(peer, state);
    void this.send(peer, this.handshake());
  }

  /** A transport peer was lost: drop everything held for it. */
  peerLeft(peer: string): void {
    this.peersState.get(peer)?.window.close();
    this.peersState.delete(peer);
  }

  /** A transport message from a peer; handled one at a time, in arrival order, per peer. */
  receive(peer: string, bytes: Uint8Array): Promise<void> {
    let state = this.peersState.get(peer);
    if (!state) {
      // A frame from a peer the transport has not announced (yet): treat it as present.
      this.peerJoined(peer);
      state = this.peersState.get(peer)!;
    }
    const run = state.inbound.then(() => this.handle(peer, bytes)).catch(() => undefined);
    state.inbound = run;
    return run;
  }

  /** Stops: no more frames leave. */
  close(): void {
    for (const peer of [...this.peersState.keys()]) this.peerLeft(peer);
  }

  // ---- application ------------------------------------------------------------------------------

  put(collection: string, key: string, value: Value, crdtType?: string): WireRecord {
    encodeValue(value); // refuse what the wire cannot carry before storing it
    return this.write(collection, { key, value, is_deleted: false, hlc: this.clock.tick(), ...(crdtType ? { crdt_type: crdtType } : {}) });
  }

  delete(collection: string, key: string): WireRecord {
    return this.write(collection, { key, value: null, is_deleted: true, hlc: this.clock.tick() });
  }

  /** The pull half of forceSync: ask every agreed peer for a hello, and send ours. */
  forceSync(): void {
    for (const [peer, s] of this.peersState) {
      if (s.version === undefined) continue;
      void this.send(peer, { type: "hello", node: this.node });
      void this.send(peer, { type: "poke" });
    }
  }

  /** Peers with an agreed version. */
  agreedPeers(): string[] {
    return [...this.peersState].filter(([, s]) => s.version !== undefined).map(([p]) => p);
  }

  peerInfo(peer: string): { version?: number; incompatible: boolean; node?: string; capabilities: string[] } | undefined {
    const s = this.peersState.get(peer);
    return s && { version: s.version, incompatible: s.incompatible, node: s.node, capabilities: [...s.caps] };
  }

  /** Frames queued or in flight to all peers (0 when every window has drained). */
  pendingFrames(): number {
    let n = 0;
    for (const s of this.peersState.values()) n += s.window.pending;
    return n;
  }

  /** Resolves when every peer's inbound queue is empty. */
  async idle(): Promise<void> {
    await Promise.all([...this.peersState.values()].map((s) => s.inbound));
  }

  // ---- internals --------------------------------------------------------------------------------

  private fresh(peer: string): PeerState {
    return {
      window: new SendWindow((b) => this.opts.transmit(peer, b)),
      inbound: Promise.resolve(),
      tokens: new InstTokens(),
      replied: false,
      caps: new Set(),
      incompatible: false,
    };
  }

  private handshake(): MessageOf<"handshake"> {
    return makeHandshake({ versions: this.versions, inst: this.inst, recon: this.opts.recon ?? true });
  }

  /**
   * Stores a local write and queues it for every agreed peer. Writes made in one turn of the event
   * loop leave together (one delta per collection, split at 500 records), so a burst of writes
   * costs a few frames rather than one each, and stays within the relay's per-peer rate.
   */
  private write(collection: string, record: WireRecord): WireRecord {
    this.store.merge(collection, record);
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
    for (const peer of this.agreedPeers()) for (const [collection, records] of batches) void this.sendDelta(peer, collection, records);
  }

  private send(peer: string, m: Message): Promise<void> {
    const state = this.peersState.get(peer);
    if (!state) return Promise.resolve();
    const sealed = sealFrame(this.opts.key, encodeMessage(m));
    this.sent.frames[m.type] = (this.sent.frames[m.type] ?? 0) + 1;
    this.sent.bytes += sealed.length;
    return state.window.push(sealed).catch(() => undefined);
  }

  /** Deltas of at most 500 records and delta_max_bytes each; a record is never split. */
  private async sendDelta(peer: string, collection: string, records: readonly WireRecord[]): Promise<void> {
    let batch: WireRecord[] = [];
    let bytes = 0;
    const sends: Promise<void>[] = [];
    for (const r of records) {
      const size = encodeValue(r.value).length + r.key.length * 3 + r.hlc.length + 16;
      if (batch.length && (batch.length >= L.delta_max_records || bytes + size > L.delta_max_bytes)) {
        sends.push(this.send(peer, { type: "delta", collection, records: batch }));
        batch = [];
        bytes = 0;
      }
      batch.push(r);
      bytes += size;
    }
    if (batch.length) sends.push(this.send(peer, { type: "delta", collection, records: batch }));
    await Promise.all(sends);
  }

  private async handle(peer: string, bytes: Uint8Array): Promise<void> {
    const frame = openFrame(this.opts.key, bytes);
    if (!frame) return; // fails authentication: dropped silently
    const m = decodeMessage(frame);
    if (!m) return; // malformed: dropped
    const state = this.peersState.get(peer);
    if (!state) return;
    this.received.frames[m.type] = (this.received.frames[m.type] ?? 0) + 1;
    this.received.bytes += bytes.length;
    if (m.type === "handshake") return this.onHandshake(peer, state, m);
    if (state.version === undefined || state.incompatible) return; // nothing before agreement
    const handler = this.handlers[m.type] as (peer: string, state: PeerState, m: Message) => void | Promise<void>;
    await handler.call(this, peer, state, m);
  }

  private onHandshake(peer: string, state: PeerState, h: MessageOf<"handshake">): void {
    const token = instToken(h);
    if (token !== undefined && state.tokens.observe(token) === "restart") {
      // The peer restarted: drop its session, negotiated version and pending work, renegotiate.
      const tokens = state.tokens;
      state.window.close();
      state = { ...this.fresh(peer), tokens, inbound: state.inbound };
      this.peersState.set(peer, state);
      this.emit("restarted", peer);
    }
    if (!state.replied) {
      state.replied = true;
      void this.send(peer, this.handshake());
    }
    if (state.version !== undefined || state.incompatible) return;
    const v = negotiateVersion(this.versions, h.versions);
    if (v === null) {
      state.incompatible = true;
      this.emit("incompatible", peer, h.versions);
      return;
    }
    state.version = v;
    state.caps = new Set(h.capabilities);
    this.emit("agreed", peer, v);
    // With recon1 on both sides one pull suffices (leaves ship both ways); without it each side pulls.
    const self = this.opts.selfId();
    const recon = state.caps.has(CAP_RECON) && (this.opts.recon ?? true);
    if (!recon || (self !== undefined && self < peer)) void this.send(peer, { type: "hello", node: this.node });
  }

  private readonly handlers: { [T in Exclude<MessageType, "handshake">]: (peer: string, state: PeerState, m: MessageOf<T>) => void | Promise<void> } = {
    hello: (peer, state, m) => {
      state.node = m.node;
      const watermarks = this.store.collectionNames().map((collection) => ({ collection, watermark: this.store.watermark(collection) }));
      void this.send(peer, { type: "state", watermarks: watermarks.slice(0, L.state_max_collections) });
    },
    state: (peer, state, m) => {
      const theirs = new Map(m.watermarks.map((w) => [w.collection, w.watermark]));
      const names = new Set([...this.store.collectionNames(), ...theirs.keys()]);
      const recon = state.caps.has(CAP_RECON) && (this.opts.recon ?? true);
      for (const collection of names) {
        if (recon) void this.send(peer, openingProbe(this.store, collection));
        else void this.sendDelta(peer, collection, this.store.newerThan(collection, theirs.get(collection) ?? ""));
      }
    },
    delta: (peer, _state, m) => {
      const limit = this.clock.physical() + (this.opts.maxClockDriftMs ?? L.max_clock_drift_ms);
      const changed: WireRecord[] = [];
      for (const r of m.records) {
        if (hlcWall(r.hlc) > limit) {
          this.emit("refused", m.collection, r, peer); // refused with its document; offered again later
          continue;
        }
        if (this.store.merge(m.collection, r)) {
          this.clock.observe(r.hlc);
          changed.push(r);
        }
      }
      if (changed.length) this.emit("change", m.collection, changed, peer);
    },
    poke: (peer) => {
      void this.send(peer, { type: "hello", node: this.node });
    },
    "ratchet-hello": () => {
      // Sessions belong to identity mode (device identities): without an identity, ignored.
    },
    reconcile: (peer, _state, m) => {
      const { ship, reply } = respondToReconcile(this.store, m);
      if (ship.length) void this.sendDelta(peer, m.collection, ship);
      if (reply) void this.send(peer, reply);
    },
  };
}
