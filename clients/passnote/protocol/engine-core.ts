// The state the Passnote sync engine's parts share (the Passnote protocol): the options, the store and clock,
// the local identity, one PeerState per transport peer, the event listeners, and the one way a
// message leaves (sealed for its channel, queued in the peer's ordered send window). The parts
// that act on it: negotiation.ts (the connection handshake), sessions.ts (ratchet-hello and
// sessions), anti-entropy.ts (hello / state / delta / poke / reconcile); sync.ts composes them.
import { PASSNOTE_LIMITS as L } from "../../../shared/limits";
import { encodeValue, Writer } from "./codec";
import {
  CAP_RECON2,
  CAP_RECON2_LEGACY,
  HANDSHAKES_PER_CONNECTION,
  InstTokens,
  makeHandshake,
  newInstToken,
  SUPPORTED_VERSIONS,
} from "./handshake";
import { HlcClock } from "./hlc";
import { MemoryStore, type PassnoteStore } from "./records";
import {
  ROSTER_COLLECTION,
  devicePublicKey,
  deviceIdOf,
  keyTagOf,
  verifyRosterRecord,
  type DeviceIdentity,
  type RosterEntry,
} from "./roster";
import { sealFrame, sealPlain } from "./seal";
import { wipeEphemeral } from "./session";
import { SendWindow } from "./send-window";
import { encodeMessage, encodeRecord, LEGACY_RECONCILE2_TAG, type Message, type MessageOf, type WireRecord } from "./wire";
import { EngineEvents, StoreFailedError, type SyncEvents } from "./events";
import { Outbox, type Channel, type PeerState } from "./peer-state";

export { ListenerError, StoreFailedError, type SyncEvents } from "./events";
export type { Channel, PeerState } from "./peer-state";

export interface SyncEngineOptions {
  /** This node's id (HLC node part, hello). */
  node: string;
  /** Identity mode (the default in the reference peer): the group's credentials and this device's key. */
  identity?: DeviceIdentity;
  /** Passphrase-only mode: the 32-byte passphrase key, the only membership. */
  key?: Uint8Array;
  /** Hands one sealed frame to the transport for `peer`; resolves when the transport took it. */
  transmit: (peer: string, bytes: Uint8Array) => Promise<void>;
  /** This side's transport peer id, once known. */
  selfId: () => string | undefined;
  store?: PassnoteStore;
  now?: () => number;
  versions?: readonly number[];
  /** Offer recon1 (default true). */
  recon?: boolean;
  /** Offer recon2 too (default false): used with peers that offer it, recon1 with the others. */
  recon2?: boolean;
  /** Offer x-edge-relay/digest (default true): the anti-entropy pass opens with one digest per channel. */
  digest?: boolean;
  /** This instance's inst token (default: a fresh random one). */
  inst?: string;
  maxClockDriftMs?: number;
  /** Minimum milliseconds between two re-send-your-hello requests to one peer. */
  rehelloIntervalMs?: number;
  /** Frames queued to one peer behind the send window (default send_queue_max_frames). */
  sendQueueMaxFrames?: number;
}

export interface TrafficStats {
  frames: Record<string, number>;
  bytes: number;
}

/** This device in identity mode: its credentials plus what derives from them. */
type LocalIdentity = DeviceIdentity & { pub: Uint8Array; deviceId: string; keyTag: Uint8Array };

const emptyStats = (): TrafficStats => ({ frames: {}, bytes: 0 });

/** Paced work is fed into a peer's window while it holds fewer frames than this (four windows). */
const PACED_BELOW = L.max_in_flight_frames * 4;

export class EngineCore {
  readonly node: string;
  readonly store: PassnoteStore;
  readonly clock: HlcClock;
  readonly inst: string;
  readonly versions: readonly number[];
  readonly identity?: LocalIdentity;
  readonly sent: TrafficStats = emptyStats();
  readonly received: TrafficStats = emptyStats();
  readonly peers = new Map<string, PeerState>();
  private readonly events = new EngineEvents();
  private readonly rosterCache = new Map<string, { hlc: string; entry: RosterEntry | null }>();

  constructor(readonly opts: SyncEngineOptions) {
    if (opts.identity) {
      const { group, deviceKey } = opts.identity;
      if (group.rosterKey.length !== 32 || group.groupKey.length !== 32 || group.owner.length !== 32 || deviceKey.length !== 32) {
        throw new Error("roster key, group key, owner and device key are 32 bytes each");
      }
      const pub = devicePublicKey(deviceKey);
      this.identity = { ...opts.identity, pub, deviceId: deviceIdOf(pub), keyTag: keyTagOf(group.groupKey) };
    } else if (opts.key?.length !== 32) throw new Error("the passphrase key is 32 bytes");
    this.node = opts.node;
    this.store = opts.store ?? new MemoryStore();
    this.clock = new HlcClock(opts.node, opts.now);
    this.inst = opts.inst ?? newInstToken();
    this.versions = opts.versions ?? SUPPORTED_VERSIONS;
  }

  on<K extends keyof SyncEvents>(event: K, fn: SyncEvents[K]): () => void {
    return this.events.on(event, fn);
  }

  /** Calls the app's listeners of an event, each guarded (events.ts): emit after the protocol's own reaction. */
  emit<K extends keyof SyncEvents>(event: K, ...args: Parameters<SyncEvents[K]>): void {
    this.events.emit(event, ...args);
  }

  /** Set once the store failed: the engine has stopped (nothing leaves, nothing is taken in). */
  failure: StoreFailedError | undefined;
  private flushWatch = false;

  /**
   * Merges a record into the store. A store that throws stops the engine (storeFailed) and the
   * StoreFailedError is thrown; a write the store took but could not make durable later (its
   * flushed() rejects) stops it too, once that is known.
   */
  merge(collection: string, record: WireRecord): boolean {
    if (this.failure) throw this.failure;
    let changed: boolean;
    try {
      changed = this.store.merge(collection, record);
    } catch (e) {
      throw this.storeFailed(e);
    }
    if (changed && !this.flushWatch) {
      this.flushWatch = true;
      queueMicrotask(() => {
        this.flushWatch = false;
        this.store.flushed().catch((e: unknown) => void this.storeFailed(e));
      });
    }
    return changed;
  }

  /** Handling a frame threw: a store failure (already reported) or a fault, reported as `error`. */
  handlerFailed(e: unknown): void {
    if (e instanceof StoreFailedError) return;
    this.emit("error", e instanceof Error ? e : new Error(String(e)));
  }

  /**
   * The store failed: every peer is dropped (nothing more is sent, so no peer learns of records
   * this side does not hold), later frames and peers are ignored, and the app gets an `error`.
   */
  storeFailed(e: unknown): StoreFailedError {
    if (e instanceof StoreFailedError) return e;
    if (this.failure) return this.failure;
    const err = new StoreFailedError(e);
    this.failure = err;
    for (const s of this.peers.values()) {
      s.window.close();
      s.paced = [];
      s.session = undefined;
      wipeEphemeral(s.mine);
    }
    this.peers.clear();
    this.emit("error", err);
    return err;
  }

  /** Whether this side offers x-edge-relay/digest. */
  get digest(): boolean {
    return this.opts.digest ?? true;
  }

  /** Whether this side offers recon1. */
  get recon(): boolean {
    return this.opts.recon ?? true;
  }

  fresh(peer: string): PeerState {
    const window = new SendWindow((b) => this.opts.transmit(peer, b));
    window.onSettled = () => {
      const state = this.peers.get(peer);
      if (state?.window === window) this.feed(peer, state);
    };
    const outbox = new Outbox(
      () => {
        const state = this.peers.get(peer);
        if (state?.outbox === outbox) this.feed(peer, state);
      },
      (e) => this.handlerFailed(e),
    );
    return {
      window,
      outbox,
      paced: [],
      overflowed: false,
      inbound: Promise.resolve(),
      tokens: new InstTokens(),
      replied: false,
      handshakes: 0,
      caps: new Set(),
      incompatible: false,
      shipped: new Map(),
      stateSeries: new Map(),
      digestHello: new Set(),
      askHello: new Set(),
      heard: false,
      seenEphemerals: [],
      helloAt: -Infinity,
      lastRehello: -Infinity,
      lastAnswer: -Infinity,
    };
  }

  /**
   * Sends this side's handshake to a peer, unless it already sent HANDSHAKES_PER_CONNECTION on
   * this connection (the wire's bound: one on connect, one reply); false when it did not.
   */
  sendHandshake(peer: string, state: PeerState): boolean {
    if (state.handshakes >= HANDSHAKES_PER_CONNECTION) return false;
    state.handshakes++;
    void this.send(peer, this.handshake());
    return true;
  }

  handshake(): MessageOf<"handshake"> {
    return makeHandshake({
      versions: this.versions,
      inst: this.inst,
      recon: this.recon,
      recon2: this.opts.recon2,
      digest: this.digest,
      deviceKey: this.identity?.pub,
    });
  }

  /** The channel of frames that are about no collection (handshake, hello, poke): plain or passphrase. */
  get base(): Channel {
    return this.identity ? "plain" : "passphrase";
  }

  /** The channel a collection travels in. */
  channelOf(collection: string): Channel {
    if (!this.identity) return "passphrase";
    return collection === ROSTER_COLLECTION ? "plain" : "session";
  }

  /** Whether a frame of this channel may speak of this collection. */
  inScope(collection: string, ch: Channel): boolean {
    return ch === "passphrase" || this.channelOf(collection) === ch;
  }

  /** Identity mode: the roster entry of a device (null when it is not listed). */
  rosterEntry(device: string): RosterEntry | null {
    if (!this.identity) return null;
    const r = this.store.get(ROSTER_COLLECTION, device);
    if (!r) return null;
    const cached = this.rosterCache.get(device);
    if (cached?.hlc === r.hlc) return cached.entry;
    const entry = verifyRosterRecord(this.identity.group.owner, r);
    this.rosterCache.set(device, { hlc: r.hlc, entry });
    return entry;
  }

  /** Queues paced work for a peer (see PeerState.paced) and feeds what fits now. */
  pace(peer: string, state: PeerState, work: () => void): void {
    state.paced.push(work);
    this.feed(peer, state);
  }

  /**
   * Feeds paced work while the window holds few frames; once everything has drained after a frame
   * was left out (the queue was full), asks the peer for its state again in each channel.
   */
  feed(peer: string, state: PeerState): void {
    let i = 0;
    // Work waits while a shipment's records are being read (the outbox says when it is done).
    while (i < state.paced.length && state.window.pending < PACED_BELOW && !state.outbox.busy) state.paced[i++]();
    if (i) state.paced.splice(0, i);
    if (state.overflowed && state.window.pending === 0 && state.paced.length === 0 && !state.outbox.busy) {
      state.overflowed = false;
      state.shipped.clear(); // without recon1: what was left out may have carried records
      for (const ch of this.identity
        ? state.session
          ? (["plain", "session"] as const)
          : (["plain"] as const)
        : (["passphrase"] as const)) {
        void this.send(peer, { type: "hello", node: this.node }, ch);
      }
    }
  }

  /**
   * Seals one message for its channel and queues it; a session message without a session is not
   * sent. Behind a shipment whose records are still being read, it waits its turn (Outbox).
   */
  send(peer: string, m: Message, ch: Channel = this.base): Promise<void> {
    const state = this.peers.get(peer);
    if (!state || this.failure) return Promise.resolve();
    if (state.outbox.busy) {
      let sent: Promise<void> = Promise.resolve();
      const step = () => {
        sent = this.sendNow(peer, state, m, ch);
      };
      return state.outbox.after(step).then(() => sent);
    }
    return this.sendNow(peer, state, m, ch);
  }

  private sendNow(peer: string, state: PeerState, m: Message, ch: Channel): Promise<void> {
    if (this.peers.get(peer) !== state || this.failure) return Promise.resolve(); // the peer left meanwhile
    // The queue is bounded: past send_queue_max_frames a frame is left out (before it is sealed,
    // so no ratchet counter is skipped) and the peer is re-reconciled once the queue drains. The
    // connection's own handshakes and ratchet-hellos are never left out.
    if (
      state.window.queued >= (this.opts.sendQueueMaxFrames ?? L.send_queue_max_frames) &&
      m.type !== "handshake" &&
      m.type !== "ratchet-hello"
    ) {
      state.overflowed = true;
      return Promise.resolve();
    }
    const frame = encodeMessage(m);
    // A peer of the previous release knows reconcile2 by its old tag only.
    if (m.type === "reconcile2" && !state.caps.has(CAP_RECON2) && state.caps.has(CAP_RECON2_LEGACY)) frame[2] = LEGACY_RECONCILE2_TAG;
    let sealed: Uint8Array;
    if (ch === "passphrase") sealed = sealFrame(this.opts.key!, frame);
    else if (ch === "plain") sealed = sealPlain(this.identity!.group.rosterKey, frame);
    else if (state.session)
      sealed = state.session.seal(frame); // the counter is taken in queue order
    else return Promise.resolve();
    if (m.type === "hello") {
      state.stateSeries.delete(ch); // its answer starts a new state series
      state.digestHello.delete(ch);
      state.askHello.delete(ch);
    }
    this.sent.frames[m.type] = (this.sent.frames[m.type] ?? 0) + 1;
    this.sent.bytes += sealed.length;
    return state.window.push(sealed).catch(() => undefined);
  }

  /**
   * Ships records by key: reads them from the store and sends them as deltas. Where the store
   * reads asynchronously (its values are not in memory), the read is awaited and every later frame
   * to the peer waits behind it (Outbox), so nothing overtakes the records. A read that fails stops
   * the engine as any store failure does.
   */
  ship(peer: string, collection: string, keys: readonly string[], ch: Channel): void {
    const state = this.peers.get(peer);
    if (!state || this.failure || !keys.length) return;
    let read: readonly WireRecord[] | Promise<readonly WireRecord[]>;
    try {
      read = this.store.read(collection, keys);
    } catch (e) {
      this.storeFailed(e);
      return;
    }
    if (!(read instanceof Promise) && !state.outbox.busy) {
      void this.sendDelta(peer, collection, read, ch);
      return;
    }
    if (read instanceof Promise) read.catch(() => undefined); // handled in its turn, below
    void state.outbox.after(async () => {
      let records: readonly WireRecord[];
      try {
        records = await read;
      } catch (e) {
        this.storeFailed(e);
        return;
      }
      for (const m of this.deltas(collection, records)) void this.sendNow(peer, state, m, ch);
    });
  }

  /** Deltas of at most 500 records and delta_max_bytes each; a record is never split. */
  async sendDelta(peer: string, collection: string, records: readonly WireRecord[], ch: Channel): Promise<void> {
    await Promise.all(this.deltas(collection, records).map((m) => this.send(peer, m, ch)));
  }

  private deltas(collection: string, records: readonly WireRecord[]): MessageOf<"delta">[] {
    const out: MessageOf<"delta">[] = [];
    let batch: WireRecord[] = [];
    let bytes = 0;
    for (const r of records) {
      const size = encodeValue(r.value).length + r.key.length * 3 + r.hlc.length + 16;
      // A record that could not travel in one binary message (only a peer built otherwise could
      // have given it to us: local writes are refused) is left out, never sent to be refused.
      if (size > L.record_max_bytes && encodeRecord(new Writer(), r).finish().length > L.record_max_bytes) continue;
      if (batch.length && (batch.length >= L.delta_max_records || bytes + size > L.delta_max_bytes)) {
        out.push({ type: "delta", collection, records: batch });
        batch = [];
        bytes = 0;
      }
      batch.push(r);
      bytes += size;
    }
    if (batch.length) out.push({ type: "delta", collection, records: batch });
    return out;
  }
}
