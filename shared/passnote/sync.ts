// The Passnote sync engine (seed 001): the connection handshake with version negotiation and inst
// tokens, hello / state / poke, deltas of at most 500 whole records with the clock bound, range
// reconciliation, an ordered send window per peer and one-at-a-time inbound handling per peer.
// It does no I/O: the caller gives it a `transmit` function and feeds it transport events.
//
// Two modes. With a device identity (the seed's default) there are three channels: plain frames
// (kind 0x00, under the roster key) carry only handshake, ratchet-hello, hello, poke and the
// roster collection's state, delta and reconcile; everything about user collections travels in
// ratcheted frames (kind 0x01) inside a session opened with a non-revoked roster member
// (session.ts); the roster's records are accepted only when signed by the group's owner
// (roster.ts). Without an identity every frame is sealed under the passphrase key (seal.ts).
//
// Profile decisions (the seed is silent): after the version is agreed, the side with the lower
// transport peer id sends hello (the pull; both sides do without recon1); the other side can ask
// for it with poke (forceSync).
// The receiver of `state` probes every collection either side named (recon2 when both sides offer
// it, else recon1 on both sides), or, without recon1, ships the records newer than the peer's
// watermark. Local writes are pushed to
// every agreed peer as deltas, the writes of one event-loop turn together.
import { PASSNOTE_LIMITS as L } from "../limits";
import { bytesToHex, equalBytes } from "../encoding";
import { encodeValue, type Value } from "./codec";
import {
  CAP_RECON,
  CAP_RECON2,
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
import { openingProbe2, respondToReconcile2 } from "./reconcile2";
import {
  ROSTER_COLLECTION,
  devicePublicKey,
  deviceIdOf,
  keyTagOf,
  signRosterRecord,
  verifyRosterRecord,
  type DeviceIdentity,
  type RosterEntry,
} from "./roster";
import { KIND_PLAIN, KIND_RATCHET, openFrame, openPlain, sealFrame, sealPlain } from "./seal";
import { newEphemeral, openSession, signRatchetHello, verifyRatchetHello, type Ephemeral, type RatchetHello, type Session } from "./session";
import { SendWindow } from "./send-window";
import { decodeMessage, encodeMessage, type Message, type MessageOf, type MessageType, type WireRecord } from "./wire";

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
  store?: MemoryStore;
  now?: () => number;
  versions?: readonly number[];
  /** Offer recon1 (default true). */
  recon?: boolean;
  /** Offer recon2 too (default false): used with peers that offer it, recon1 with the others. */
  recon2?: boolean;
  /** This instance's inst token (default: a fresh random one). */
  inst?: string;
  maxClockDriftMs?: number;
  /** Minimum milliseconds between two re-send-your-hello requests to one peer. */
  rehelloIntervalMs?: number;
}

/**
 * Which layer a frame travelled in: "passphrase" (no identity), "plain" (kind 0x00, roster key)
 * or "session" (kind 0x01, ratcheted).
 */
export type Channel = "passphrase" | "plain" | "session";

export type DropReason = "unauthenticated" | "malformed" | "out-of-scope" | "no-session" | "stale" | "unopenable" | "roster-signature";

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
  /** Identity mode: a ratchet session with a peer's device is open. */
  session: (peer: string, device: string) => void;
  /** Identity mode: a peer's session ended because its device was revoked (or left the roster). */
  sessionEnded: (peer: string, device: string) => void;
  /** Identity mode: a ratchet-hello failed one of its acceptance checks. */
  helloRefused: (peer: string, reason: string) => void;
  /** Identity mode: this side asked a peer to re-send its hello (sent a fresh one of its own). */
  rehello: (peer: string) => void;
  /** A frame (or a roster record) was dropped; nothing is said on the wire. */
  dropped: (peer: string, reason: DropReason) => void;
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
  // ---- identity mode ----
  /** This side's ephemeral key for the connection; its secret is wiped once the session exists. */
  mine?: Ephemeral;
  session?: Session;
  /** The peer's device, once its hello was accepted. */
  peerDevice?: string;
  /** A hello from a device whose roster record has not arrived yet (re-checked on roster change). */
  held?: RatchetHello;
  /** Ephemeral keys of hellos accepted from this peer (hex): a replayed hello changes nothing. */
  seenEphemerals: string[];
  /** When this side last asked the peer to re-send its hello. */
  lastRehello: number;
  /** When this side last answered a peer's new hello with a fresh one (dropping a session). */
  lastAnswer: number;
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
  private readonly identity?: DeviceIdentity & { pub: Uint8Array; deviceId: string; keyTag: Uint8Array };
  private readonly rosterCache = new Map<string, { hlc: string; entry: RosterEntry | null }>();

  constructor(private readonly opts: SyncEngineOptions) {
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
    // The founding device lists itself: the roster's first record, signed by its own key.
    if (this.isOwner && !this.rosterEntry(this.identity!.deviceId)) {
      this.store.merge(ROSTER_COLLECTION, signRosterRecord(this.identity!.deviceKey, this.identity!.pub, false, this.clock.tick()));
    }
  }

  /** Identity mode: this device's id (hex of SHA-256(public key), 16 bytes). */
  get deviceId(): string | undefined {
    return this.identity?.deviceId;
  }

  /** Identity mode: whether this device is the group's owner (it signs the roster). */
  get isOwner(): boolean {
    return !!this.identity && equalBytes(this.identity.pub, this.identity.group.owner);
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
    this.userCollection(collection);
    encodeValue(value); // refuse what the wire cannot carry before storing it
    return this.write(collection, { key, value, is_deleted: false, hlc: this.clock.tick(), ...(crdtType ? { crdt_type: crdtType } : {}) });
  }

  delete(collection: string, key: string): WireRecord {
    this.userCollection(collection);
    return this.write(collection, { key, value: null, is_deleted: true, hlc: this.clock.tick() });
  }

  /** Identity mode, owner only: admits a device (by its Ed25519 public key) to the roster. */
  admit(pub: Uint8Array): WireRecord {
    if (!this.isOwner) throw new Error("only the group's owner signs roster records");
    return this.write(ROSTER_COLLECTION, signRosterRecord(this.identity!.deviceKey, pub, false, this.clock.tick()));
  }

  /** Identity mode, owner only: revokes a device. Its sessions end; it gets no user data again. */
  revoke(device: string): WireRecord {
    const entry = this.rosterEntry(device);
    if (!this.isOwner || !entry) throw new Error("only the group's owner revokes, and only a listed device");
    if (device === this.identity!.deviceId) throw new Error("the owner cannot revoke itself: found a new group instead");
    return this.write(ROSTER_COLLECTION, signRosterRecord(this.identity!.deviceKey, entry.pub, true, this.clock.tick()));
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

  /** The pull half of forceSync: ask every agreed peer for a hello, and send ours. */
  forceSync(): void {
    for (const [peer, s] of this.peersState) {
      if (s.version === undefined) continue;
      for (const ch of this.identity ? (s.session ? (["plain", "session"] as const) : (["plain"] as const)) : (["passphrase"] as const)) {
        void this.send(peer, { type: "hello", node: this.node }, ch);
        void this.send(peer, { type: "poke" }, ch);
      }
    }
  }

  /** Identity mode: peers with an open session (the only ones that get user data). */
  sessionPeers(): string[] {
    return [...this.peersState].filter(([, s]) => s.session).map(([p]) => p);
  }

  /** Peers with an agreed version. */
  agreedPeers(): string[] {
    return [...this.peersState].filter(([, s]) => s.version !== undefined).map(([p]) => p);
  }

  peerInfo(peer: string):
    | { version?: number; incompatible: boolean; node?: string; capabilities: string[]; session: boolean; device?: string; held: boolean; ephemeralSecretWiped: boolean }
    | undefined {
    const s = this.peersState.get(peer);
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
      seenEphemerals: [],
      lastRehello: -Infinity,
      lastAnswer: -Infinity,
    };
  }

  private handshake(): MessageOf<"handshake"> {
    return makeHandshake({ versions: this.versions, inst: this.inst, recon: this.opts.recon ?? true, recon2: this.opts.recon2, deviceKey: this.identity?.pub });
  }

  /** Whether both sides offered recon2 (then it replaces recon1 with this peer). */
  private recon2With(state: PeerState): boolean {
    return (this.opts.recon ?? true) && !!this.opts.recon2 && state.caps.has(CAP_RECON) && state.caps.has(CAP_RECON2);
  }

  /** The channel of frames that are about no collection (handshake, hello, poke): plain or passphrase. */
  private get base(): Channel {
    return this.identity ? "plain" : "passphrase";
  }

  /** The channel a collection travels in. */
  private channelOf(collection: string): Channel {
    if (!this.identity) return "passphrase";
    return collection === ROSTER_COLLECTION ? "plain" : "session";
  }

  /** Whether a frame of this channel may speak of this collection. */
  private inScope(collection: string, ch: Channel): boolean {
    return ch === "passphrase" || this.channelOf(collection) === ch;
  }

  private userCollection(collection: string): void {
    if (this.identity && collection === ROSTER_COLLECTION) throw new Error(`${ROSTER_COLLECTION} is the roster: use admit() and revoke()`);
  }

  /**
   * Stores a local write and queues it for every agreed peer. Writes made in one turn of the event
   * loop leave together (one delta per collection, split at 500 records), so a burst of writes
   * costs a few frames rather than one each, and stays within the relay's per-peer rate.
   */
  private write(collection: string, record: WireRecord): WireRecord {
    this.store.merge(collection, record);
    if (this.identity && collection === ROSTER_COLLECTION) this.rosterChanged();
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
    for (const [peer, s] of this.peersState) {
      if (s.version === undefined || s.incompatible) continue;
      for (const [collection, records] of batches) {
        const ch = this.channelOf(collection);
        if (ch === "session" && !s.session) continue; // user data only inside a session
        void this.sendDelta(peer, collection, records, ch);
      }
    }
  }

  /** Seals one message for its channel and queues it; a session message without a session is not sent. */
  private send(peer: string, m: Message, ch: Channel = this.base): Promise<void> {
    const state = this.peersState.get(peer);
    if (!state) return Promise.resolve();
    const frame = encodeMessage(m);
    let sealed: Uint8Array;
    if (ch === "passphrase") sealed = sealFrame(this.opts.key!, frame);
    else if (ch === "plain") sealed = sealPlain(this.identity!.group.rosterKey, frame);
    else if (state.session) sealed = state.session.seal(frame); // the counter is taken in queue order
    else return Promise.resolve();
    this.sent.frames[m.type] = (this.sent.frames[m.type] ?? 0) + 1;
    this.sent.bytes += sealed.length;
    return state.window.push(sealed).catch(() => undefined);
  }

  /** Deltas of at most 500 records and delta_max_bytes each; a record is never split. */
  private async sendDelta(peer: string, collection: string, records: readonly WireRecord[], ch: Channel): Promise<void> {
    let batch: WireRecord[] = [];
    let bytes = 0;
    const sends: Promise<void>[] = [];
    for (const r of records) {
      const size = encodeValue(r.value).length + r.key.length * 3 + r.hlc.length + 16;
      if (batch.length && (batch.length >= L.delta_max_records || bytes + size > L.delta_max_bytes)) {
        sends.push(this.send(peer, { type: "delta", collection, records: batch }, ch));
        batch = [];
        bytes = 0;
      }
      batch.push(r);
      bytes += size;
    }
    if (batch.length) sends.push(this.send(peer, { type: "delta", collection, records: batch }, ch));
    await Promise.all(sends);
  }

  private async handle(peer: string, bytes: Uint8Array): Promise<void> {
    const state = this.peersState.get(peer);
    if (!state) return;
    const opened = this.open(peer, state, bytes);
    if (!opened) return; // fails authentication at some layer: dropped silently
    const { frame, ch } = opened;
    const m = decodeMessage(frame);
    if (!m) return this.emit("dropped", peer, "malformed");
    this.received.frames[m.type] = (this.received.frames[m.type] ?? 0) + 1;
    this.received.bytes += bytes.length;
    if (!this.allowed(m, ch)) return this.emit("dropped", peer, "out-of-scope");
    if (m.type === "handshake") return this.onHandshake(peer, state, m);
    if (state.version === undefined || state.incompatible) return; // nothing before agreement
    const handler = this.handlers[m.type] as (peer: string, state: PeerState, m: Message, ch: Channel) => void | Promise<void>;
    await handler.call(this, peer, state, m, ch);
  }

  /** Removes the layers a frame travelled in: the frame and its channel, or null (dropped). */
  private open(peer: string, state: PeerState, bytes: Uint8Array): { frame: Uint8Array; ch: Channel } | null {
    if (!this.identity) {
      const frame = openFrame(this.opts.key!, bytes);
      if (!frame) this.emit("dropped", peer, "unauthenticated");
      return frame && { frame, ch: "passphrase" };
    }
    if (bytes[0] === KIND_PLAIN) {
      const frame = openPlain(this.identity.group.rosterKey, bytes);
      if (!frame) this.emit("dropped", peer, "unauthenticated");
      return frame && { frame, ch: "plain" };
    }
    if (bytes[0] === KIND_RATCHET) {
      if (!state.session) {
        this.emit("dropped", peer, "no-session");
        // A member we had a session with on this connection seals to a session we do not hold
        // (ours was re-keyed, or our request was not answered): ask again. A revoked or unknown
        // device never had one, so its frames are dropped without a word.
        const entry = state.peerDevice ? this.rosterEntry(state.peerDevice) : null;
        if (entry && !entry.revoked) this.requestRehello(peer, state);
        return null;
      }
      const r = state.session.open(bytes);
      if (r.status === "ok") return { frame: r.frame, ch: "session" };
      this.emit("dropped", peer, r.status);
      if (r.status === "unopenable") this.requestRehello(peer, state);
      return null;
    }
    this.emit("dropped", peer, "unauthenticated");
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
      case "delta":
      case "reconcile":
      case "reconcile2":
        return this.inScope(m.collection, ch);
      default:
        return true;
    }
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
    // Identity mode: offer a session with a fresh ephemeral key for this connection.
    if (this.identity) this.sendRatchetHello(peer, state);
    // With recon1 on both sides one pull suffices (leaves ship both ways); without it each side pulls.
    const self = this.opts.selfId();
    const recon = state.caps.has(CAP_RECON) && (this.opts.recon ?? true);
    if (!recon || (self !== undefined && self < peer)) void this.send(peer, { type: "hello", node: this.node });
  }

  // ---- identity mode: ratchet-hello and sessions ----------------------------------------------

  /** Sends a ratchet-hello with a fresh ephemeral key (dropping any session with the peer). */
  private sendRatchetHello(peer: string, state: PeerState): void {
    const self = this.opts.selfId();
    const id = this.identity;
    if (!id || self === undefined) return;
    state.session = undefined;
    state.mine = newEphemeral();
    const hello = signRatchetHello(id.deviceKey, { from: self, to: peer, device: id.deviceId, keyTag: id.keyTag, ephemeral: state.mine.pub });
    void this.send(peer, hello, "plain");
  }

  /** "accept", "hold" (the device's roster record has not arrived), or why the hello is refused. */
  private checkHello(peer: string, h: RatchetHello): string {
    if (h.to !== this.opts.selfId()) return "not addressed to this node";
    if (h.from !== peer) return "not from the transport peer it names";
    if (!equalBytes(h.keyTag, this.identity!.keyTag)) return "another key generation";
    const entry = this.rosterEntry(h.device);
    if (!entry) return "hold";
    if (entry.revoked) return "revoked device";
    if (!verifyRatchetHello(entry.pub, h)) return "bad signature";
    return "accept";
  }

  private onRatchetHello(peer: string, state: PeerState, h: RatchetHello): void {
    const verdict = this.checkHello(peer, h);
    if (verdict === "hold") {
      state.held = h;
      return;
    }
    if (verdict !== "accept") return this.emit("helloRefused", peer, verdict);
    const eph = bytesToHex(h.ephemeral);
    if (state.seenEphemerals.includes(eph)) return; // a replayed hello changes nothing
    // A new hello while a session exists (or after ours was used): the peer started afresh or asks
    // us to re-send ours. Answer with a fresh one; the session is then derived from both. Answers
    // are rate-limited like requests, so a stale hello (replayed from beyond the remembered ones)
    // cannot start an endless exchange of answers; the next request after the interval re-keys.
    const answer = !!state.session || !state.mine?.secret;
    const now = this.clock.physical();
    // Half the request interval, so that a peer's next request (rate-limited by the full interval
    // on its own clock) is never refused for arriving a little early.
    if (answer && now - state.lastAnswer < this.rehelloInterval / 2) return this.emit("helloRefused", peer, "answered too recently");
    state.seenEphemerals.push(eph);
    if (state.seenEphemerals.length > L.ratchet_hellos_remembered) state.seenEphemerals.shift();
    state.held = undefined;
    if (answer) {
      state.lastAnswer = now;
      this.sendRatchetHello(peer, state);
    }
    if (!state.mine?.secret) return;
    const session = openSession({ groupKey: this.identity!.group.groupKey, mine: state.mine, theirs: h.ephemeral, selfId: this.opts.selfId()!, peerId: peer });
    if (!session) return this.emit("helloRefused", peer, "degenerate ephemeral key");
    state.session = session;
    state.peerDevice = h.device;
    this.emit("session", peer, h.device);
    // Both sides ask for the other's state once their session exists: the later of the two hellos
    // always finds the other side's session open.
    void this.send(peer, { type: "hello", node: this.node }, "session");
  }

  /**
   * A ratcheted frame that this side cannot open: ask the peer to re-send its hello, by sending a
   * fresh one of ours (at most once per rehello interval per peer).
   */
  private requestRehello(peer: string, state: PeerState): void {
    const now = this.clock.physical();
    if (now - state.lastRehello < this.rehelloInterval) return;
    state.lastRehello = now;
    this.emit("rehello", peer);
    this.sendRatchetHello(peer, state);
  }

  private get rehelloInterval(): number {
    return this.opts.rehelloIntervalMs ?? L.rehello_interval_ms;
  }

  /** The roster changed: end sessions with devices no longer listed as members, re-check held hellos. */
  private rosterChanged(): void {
    for (const [peer, s] of this.peersState) {
      if (s.session && s.peerDevice) {
        const entry = this.rosterEntry(s.peerDevice);
        if (!entry || entry.revoked) {
          s.session = undefined;
          s.mine = undefined;
          this.emit("sessionEnded", peer, s.peerDevice);
        }
      }
      if (s.held) {
        const h = s.held;
        s.held = undefined;
        this.onRatchetHello(peer, s, h);
      }
    }
  }

  private readonly handlers: {
    [T in Exclude<MessageType, "handshake">]: (peer: string, state: PeerState, m: MessageOf<T>, ch: Channel) => void | Promise<void>;
  } = {
    hello: (peer, state, m, ch) => {
      state.node = m.node;
      const watermarks = this.store
        .collectionNames()
        .filter((c) => this.inScope(c, ch))
        .map((collection) => ({ collection, watermark: this.store.watermark(collection) }));
      void this.send(peer, { type: "state", watermarks: watermarks.slice(0, L.state_max_collections) }, ch);
    },
    state: (peer, state, m, ch) => {
      // User-collection entries in a plain state are ignored, like any user content in a plain frame.
      const theirs = new Map(m.watermarks.filter((w) => this.inScope(w.collection, ch)).map((w) => [w.collection, w.watermark]));
      const names = new Set([...this.store.collectionNames().filter((c) => this.inScope(c, ch)), ...theirs.keys()]);
      const recon = state.caps.has(CAP_RECON) && (this.opts.recon ?? true);
      for (const collection of names) {
        if (recon) void this.send(peer, this.recon2With(state) ? openingProbe2(this.store, collection) : openingProbe(this.store, collection), ch);
        else void this.sendDelta(peer, collection, this.store.newerThan(collection, theirs.get(collection) ?? ""), ch);
      }
    },
    delta: (peer, _state, m) => {
      const limit = this.clock.physical() + (this.opts.maxClockDriftMs ?? L.max_clock_drift_ms);
      const roster = !!this.identity && m.collection === ROSTER_COLLECTION;
      const changed: WireRecord[] = [];
      for (const r of m.records) {
        if (hlcWall(r.hlc) > limit) {
          this.emit("refused", m.collection, r, peer); // refused with its document; offered again later
          continue;
        }
        // Anyone holding the roster key can send roster records: only the owner's signature counts.
        if (roster && !verifyRosterRecord(this.identity!.group.owner, r)) {
          this.emit("dropped", peer, "roster-signature");
          continue;
        }
        if (this.store.merge(m.collection, r)) {
          this.clock.observe(r.hlc);
          changed.push(r);
        }
      }
      if (changed.length) this.emit("change", m.collection, changed, peer);
      if (roster && changed.length) this.rosterChanged();
    },
    poke: (peer, _state, _m, ch) => {
      void this.send(peer, { type: "hello", node: this.node }, ch);
    },
    "ratchet-hello": (peer, state, m) => {
      // Only identity mode lets a ratchet-hello through (allowed()); the passphrase mode ignores it.
      this.onRatchetHello(peer, state, m);
    },
    reconcile: (peer, _state, m, ch) => {
      const { ship, reply } = respondToReconcile(this.store, m);
      if (ship.length) void this.sendDelta(peer, m.collection, ship, ch);
      if (reply) void this.send(peer, reply, ch);
    },
    reconcile2: (peer, state, m, ch) => {
      if (!this.recon2With(state)) return; // not agreed with this peer: ignored
      const { ship, reply } = respondToReconcile2(this.store, m);
      if (ship.length) void this.sendDelta(peer, m.collection, ship, ch);
      if (reply) void this.send(peer, reply, ch);
    },
  };
}
