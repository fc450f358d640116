// The Tally client apps use with a relay (seed 003): send signed and encrypted messages through a
// persistent outbox with a stable id, receive envelopes from any path with the receiver's checks,
// dedup and receipts, and keep the ledger that sync (sync.ts) recovers and converges. The socket's
// life is in connection.ts, retries in outbox.ts, direct channels in direct.ts; protocol decisions
// come from shared/tally. This file is the state machine that joins them.
import { sealEnvelope, type PeerEnvelope } from "../../shared/tally/envelope";
import { getPublicKeyHex, npubDecode, npubEncode } from "../../shared/tally/keys";
import { signInner } from "../../shared/tally/proof";
import type { ServerMessage } from "../../shared/tally/messages";
import { innerToLedgerEntry, type LedgerEntry } from "../../shared/tally/entry";
import { bytesToHex, randomBytes } from "../../shared/encoding";
import type { OutboxItem, TallyStore } from "./store";
import { defaultStore } from "./default-store";
import { SyncEngine, type SyncOptions } from "./sync";
import { RelayConnection } from "./connection";
import { OutboxRetry } from "./outbox";
import { DirectChannels, type DirectChannel } from "./direct";
import { Emitter, type Delivery, type InnerMessage, type TallyClientEvents } from "./events";
import { IGNORED, InboundPipeline, RECEIPT_TYPE, SELF_SYNC_TYPES } from "./inbound";

export type { Delivery, InnerMessage, TallyClientEvents } from "./events";
export type { DirectChannel } from "./direct";
export { IGNORED, RECEIPT_TYPE, SELF_SYNC_TYPES };

export interface TallyClientOptions {
  /** The relay: ws(s)://, http(s):// or a bare host (clients/relay-url.ts); /tally/v1/<npub> is added. */
  relayUrl: string;
  secretKey: Uint8Array;
  /** Where the outbox, ledger and processed set persist. Default: IndexedDB or a file (default-store.ts); "memory" keeps nothing. */
  store?: TallyStore | "memory";
  /** Ask the relay to keep envelopes until this device acks them (DESIGN section 4). Default true. */
  acks?: boolean;
  /** Reconnect after a lost connection, with a jittered backoff. Default true. */
  reconnect?: boolean;
  /** First retry delay for outbox items, doubled per attempt up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs?: number;
  /** A connection not registered this long after it opened is given up. Default CLIENT_LIMITS.connect_timeout_ms. */
  connectTimeoutMs?: number;
  /** Ping interval and pong timeout on the relay socket (connection.ts). */
  pingIntervalMs?: number;
  pongTimeoutMs?: number;
  /** Ledger sync (12, 13) settings. */
  sync?: SyncOptions;
  WebSocket?: typeof WebSocket;
}

export interface SendOptions {
  /** A message id chosen by the caller (it must be new); default a random 128-bit id. */
  id?: string;
  /** "auto": a direct channel if open, else the relay; "relay"; "direct"; "both" (9.5). */
  paths?: "auto" | "relay" | "direct" | "both";
}

export class TallyClient {
  readonly npub: string;
  readonly pubkeyHex: string;
  readonly store: TallyStore;
  deviceId: string | undefined;
  readonly sync: SyncEngine;

  private readonly secretKey: Uint8Array;
  private readonly acks: boolean;
  private readonly events = new Emitter<TallyClientEvents>();
  private readonly conn: RelayConnection;
  private readonly outbox: OutboxRetry;
  private readonly channels = new DirectChannels();
  private readonly inbound: InboundPipeline;
  private registeredWaiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  private drainedFlag = false;

  constructor(options: TallyClientOptions) {
    this.secretKey = options.secretKey;
    this.acks = options.acks ?? true;
    this.pubkeyHex = getPublicKeyHex(options.secretKey);
    this.npub = npubEncode(this.pubkeyHex);
    this.store = defaultStore(this.npub, options.store);
    // The engines reach the client through small host objects, not through public members.
    this.sync = new SyncEngine(
      {
        npub: this.npub,
        store: this.store,
        connectPeer: (u) => this.connectPeer(u),
        syncNeedsRelay: (to) => this.syncNeedsRelay(to),
        sendSyncMessage: (to, type, payload) => this.sendSyncMessage(to, type, payload),
        applyFromSync: (inner, entry) => this.inbound.applyFromSync(inner, entry),
        appendLedger: (e) => this.appendLedger(e),
        dropPeer: (u) => this.channels.closeAll(u),
        emitSyncEvent: (event, ...args) =>
          (this.events.emit as (e: string, ...a: unknown[]) => Promise<unknown[]>)(event, ...args).then(() => undefined),
      },
      options.sync,
    );
    this.inbound = new InboundPipeline({
      npub: this.npub,
      secretKey: this.secretKey,
      store: this.store,
      events: this.events,
      sync: this.sync,
      appendLedger: (e) => this.appendLedger(e),
      sendReceipt: (to, id, result) => this.sendReceipt(to, id, result),
    });
    this.conn = new RelayConnection(
      {
        relayUrl: options.relayUrl,
        secretKey: options.secretKey,
        npub: this.npub,
        acks: this.acks,
        reconnect: options.reconnect ?? true,
        WebSocket: options.WebSocket ?? (globalThis as { WebSocket?: typeof WebSocket }).WebSocket,
        pingIntervalMs: options.pingIntervalMs,
        pongTimeoutMs: options.pongTimeoutMs,
        connectTimeoutMs: options.connectTimeoutMs,
      },
      { onMessage: (m) => this.onRelayMessage(m), onClosed: (code, reason) => this.onRelayClosed(code, reason) },
    );
    this.outbox = new OutboxRetry(
      this.store,
      { retryMs: options.retryMs ?? 5_000, maxRetryMs: options.maxRetryMs ?? 3_600_000 },
      (item) => this.conn.open && this.conn.send({ type: "queue_peer_envelope", envelope: item.envelope }),
      (item) => void this.events.emit("expired", item.id, item.to_user_id),
    );
  }

  // ---- events -----------------------------------------------------------------------------

  on<K extends keyof TallyClientEvents>(event: K, fn: TallyClientEvents[K]): () => void {
    return this.events.on(event, fn);
  }

  // ---- the relay connection ---------------------------------------------------------------

  get connected(): boolean {
    return this.deviceId !== undefined && this.conn.open;
  }

  /** True once queue_drained arrived on the current connection (12.2). */
  get drained(): boolean {
    return this.drainedFlag;
  }

  endpoint(): string {
    return this.conn.endpoint();
  }

  /** Connects and registers; resolves once `registered` arrived. */
  /**
   * Connects and registers; resolves once `registered` arrived. Rejects when this attempt fails:
   * at once when the connection is refused, within CLIENT_LIMITS.connect_timeout_ms when the relay
   * never answers, and at once when the platform has no WebSocket (Node 20: pass `ws`'s). With
   * `reconnect` on, the client keeps trying in the background after a rejection.
   */
  connect(): Promise<void> {
    const done = new Promise<void>((resolve, reject) => this.registeredWaiters.push({ resolve, reject }));
    try {
      this.conn.start();
    } catch (err) {
      for (const w of this.registeredWaiters.splice(0)) w.reject(err as Error);
    }
    return done;
  }

  /** Closes the connection for good (no reconnect). */
  close(): void {
    this.conn.stop();
    this.outbox.stop();
    this.sync.onClose();
  }

  /** The raw socket, for tests that must cut a connection the hard way. */
  get socket(): WebSocket | undefined {
    return this.conn.socket;
  }

  private onRelayClosed(code: number, reason: string): void {
    this.deviceId = undefined;
    this.drainedFlag = false;
    this.outbox.stop();
    this.sync.onClose();
    void this.events.emit("close", code, reason);
    for (const w of this.registeredWaiters.splice(0)) w.reject(new Error(`relay closed the connection (${code} ${reason})`));
  }

  private onRelayMessage(msg: ServerMessage): void {
    switch (msg.type) {
      case "registered":
        this.deviceId = msg.device_id;
        this.drainedFlag = false;
        this.outbox.newSession();
        for (const w of this.registeredWaiters.splice(0)) w.resolve();
        void this.events.emit("registered", msg.device_id, msg.queued);
        return;
      case "queue_drained":
        // Envelopes of the flush are processed in order before drained is announced.
        this.enqueueInbound(async () => {
          this.drainedFlag = true;
          await this.events.emit("drained");
          await this.outbox.flush(true);
          this.outbox.start();
          await this.sync.onDrained();
        });
        return;
      case "peer_envelope":
        this.enqueueInbound(() => this.receiveEnvelope(msg, "relay"));
        return;
      case "queued":
        void this.events.emit("queued", msg.id, msg.status);
        return;
      case "peer_connect":
        this.enqueueInbound(this.sync.onPeerConnect(msg.peer_user_id, msg.peer_device_id));
        void this.events.emit("peer_connect", msg.peer_user_id, msg.peer_device_id);
        return;
      case "peer_disconnect":
        this.sync.onPeerDisconnect(msg.peer_user_id, msg.peer_device_id);
        void this.events.emit("peer_disconnect", msg.peer_user_id, msg.peer_device_id);
        return;
      case "webrtc_signal":
        void this.events.emit("signal", msg.peer_user_id, msg.peer_device_id, msg.signal);
        return;
      case "error":
        void this.events.emit("relay_error", msg.code, msg.message, msg.id);
        return;
      case "challenge":
      case "pong":
        return;
    }
  }

  private enqueueInbound(task: () => Promise<void>): Promise<void> {
    return this.inbound.enqueue(task);
  }

  /** Resolves once every frame received so far has been processed. */
  idle(): Promise<void> {
    return this.inbound.idle();
  }

  // ---- receiving (inbound.ts) --------------------------------------------------------------

  /**
   * Receives one envelope from any path (the relay, or a direct channel that hands its frames
   * here): the checks of 5.3, dedup (7), receipts (8.1), and the relay ack.
   */
  receiveEnvelope(envelope: unknown, via: Delivery): Promise<void> {
    return this.inbound.receiveEnvelope(envelope, via, via === "relay" ? () => this.ack(envelope) : undefined);
  }

  private ack(envelope: unknown): void {
    if (!this.acks) return;
    const env = envelope as Partial<PeerEnvelope>;
    if (typeof env.id === "string" && typeof env.from_user_id === "string") {
      this.conn.send({ type: "ack", id: env.id, from_user_id: env.from_user_id });
    }
  }

  private async sendReceipt(to: string, messageId: string, result: string): Promise<void> {
    const envelope = this.seal(to, RECEIPT_TYPE, { message_id: messageId, result });
    // Over a live direct channel when there is one (8.1), else through the relay.
    if (this.sendDirect(to, envelope) === 0) this.conn.send({ type: "queue_peer_envelope", envelope });
  }

  // ---- sending ----------------------------------------------------------------------------

  private buildInner(to: string, type: string, payload: unknown, id?: string): InnerMessage {
    npubDecode(to); // throws on a bad npub
    return { id: id ?? newMessageId(), type, from_user_id: this.npub, to_user_id: to, created_at: new Date().toISOString(), payload };
  }

  private seal(to: string, type: string, payload: unknown): PeerEnvelope {
    return sealEnvelope(signInner(this.buildInner(to, type, payload), this.secretKey), this.secretKey);
  }

  /**
   * Sends an application message: signed and sealed once, kept in the outbox until a receipt
   * arrives, retried with the same id and bytes. Returns the message id.
   */
  async send(to: string, type: string, payload: unknown, opts: SendOptions = {}): Promise<string> {
    if (to === this.npub) throw new Error("use sendToOwnDevices for self-addressed messages");
    const inner = this.buildInner(to, type, payload, opts.id);
    const signed = signInner(inner, this.secretKey);
    const envelope = sealEnvelope(signed, this.secretKey);
    const now = Date.now();
    // Claimed for this session before it is stored, and its backoff counted from now, so neither
    // the flush that follows a registration nor the retry timer sends it a second time while this
    // call is still on its way to the relay.
    const item: OutboxItem = { id: inner.id, to_user_id: to, envelope, created_at: now, attempts: 0, last_attempt_at: now };
    this.outbox.claim(item.id);
    await this.store.putOutbox(item);
    await this.appendLedger(innerToLedgerEntry(signed, new Date(now)));
    const paths = opts.paths ?? "auto";
    const sentDirect = paths !== "relay" && this.sendDirect(to, envelope) > 0;
    // The relay is the fallback (6.2); "both" races the paths (9.5). With no receipt, the retry
    // timer hands the message to the relay later in any case.
    if (paths === "both" || paths === "relay" || (paths === "auto" && !sentDirect)) await this.outbox.tryQueue(item);
    return inner.id;
  }

  /** Hands outbox messages to the relay (see OutboxRetry.flush). */
  flushOutbox(afterRegister = false): Promise<void> {
    return this.outbox.flush(afterRegister);
  }

  /** The sealed envelope of an outbox message, for a direct channel (6.1). */
  async outboxEnvelope(id: string): Promise<PeerEnvelope | undefined> {
    return (await this.store.getOutbox(id))?.envelope;
  }

  /** Sends a self-addressed message to this user's other online devices (13.2, 13.8). Never stored. */
  sendToOwnDevices(type: string, payload: unknown): string {
    const envelope = this.seal(this.npub, type, payload);
    this.conn.send({ type: "queue_peer_envelope", envelope });
    return envelope.id;
  }

  // ---- ledger and sync (12, 13): what the sync engine asks of the client ------------------

  /** Appends to the ledger; a new entry is announced and broadcast to own devices (13.5). */
  private async appendLedger(entry: LedgerEntry): Promise<boolean> {
    if (!(await this.store.appendLedger(entry))) return false;
    this.sync.onLedgerAppend(entry);
    await this.events.emit("ledger", entry);
    return true;
  }

  /** Own devices the relay reports online that no open direct channel reaches (13.8). */
  private ownDevicesWithoutChannel(reached: Array<string | undefined>): number {
    const covered = new Set(reached);
    const uncovered = [...this.sync.ownDeviceIds()].filter((d) => !covered.has(d)).length;
    const anonymous = reached.filter((d) => d === undefined).length; // channels registered without a device id
    return Math.max(0, uncovered - anonymous);
  }

  private syncNeedsRelay(to: string): boolean {
    if (to !== this.npub) return this.channels.count(to) === 0;
    return this.ownDevicesWithoutChannel(this.channels.devices(to)) > 0;
  }

  /**
   * Sends a sync message by every path that reaches `to`: its direct channels, and the relay for
   * a friend with none, or (to === npub, 13.8) for any own device the relay reports that no channel
   * took it to. Failed channel sends count as not sent. True if any path carried it.
   */
  private sendSyncMessage(to: string, type: string, payload: unknown): boolean {
    const envelope = this.seal(to, type, payload);
    const { devices } = this.channels.send(to, JSON.stringify(envelope));
    const needRelay = to === this.npub ? this.ownDevicesWithoutChannel(devices) > 0 : devices.length === 0;
    const relayed = needRelay && this.conn.open && this.conn.send({ type: "queue_peer_envelope", envelope });
    return devices.length > 0 || relayed;
  }

  // ---- direct channels --------------------------------------------------------------------

  /**
   * Registers an open direct channel to a peer (a WebRTC data channel, say), with the peer's
   * device id when known: envelopes and receipts for that user go over it first. Frames that
   * arrive on it go to handleDirectFrame. Returns a function that unregisters it.
   */
  addDirectChannel(userId: string, channel: DirectChannel, deviceId?: string): () => void {
    const off = this.channels.add(userId, channel, deviceId);
    // 13.6: as soon as a channel to an own device opens, a sync_hello goes on it (both ends do).
    if (userId === this.npub) void this.sync.onSelfChannelOpen();
    return off;
  }

  /**
   * A JSON frame that arrived on a direct channel to `fromUserId` (6.1): an envelope, or a
   * plaintext transport-only receipt from that peer (3.2, 8.1). A plaintext receipt is taken only
   * when `fromUserId` says which peer's channel it came on (its only authentication is that
   * channel); without it the receipt is dropped (event `dropped`, reason
   * "plaintext_receipt_without_peer"). dataChannelAdapter and connectInMemory always pass it.
   */
  handleDirectFrame(data: string, fromUserId?: string): Promise<void> {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(data);
    } catch {
      return Promise.resolve();
    }
    if (typeof msg !== "object" || msg === null) return Promise.resolve();
    if (msg.type === "peer_envelope") {
      return this.enqueueInbound(() => this.receiveEnvelope(msg, "direct"));
    }
    if (msg.type === RECEIPT_TYPE && fromUserId === undefined) {
      return this.events.emit("dropped", "plaintext_receipt_without_peer", msg).then(() => undefined);
    }
    if (msg.type === RECEIPT_TYPE && fromUserId !== undefined && msg.from_user_id === fromUserId && msg.to_user_id === this.npub) {
      return this.enqueueInbound(() => this.inbound.onReceipt(fromUserId, msg.payload));
    }
    return Promise.resolve();
  }

  /** Sends an envelope over every open channel to `to`; how many took it. */
  private sendDirect(to: string, envelope: PeerEnvelope): number {
    return this.channels.send(to, JSON.stringify(envelope)).devices.length;
  }

  // ---- signaling --------------------------------------------------------------------------

  /** Asks the relay to introduce this device to every online device of `userId` (6.3, 13.1). */
  connectPeer(userId: string): void {
    this.conn.send({ type: "connect_peer", peer_user_id: userId });
  }

  /** Sends a WebRTC offer / answer / ICE candidate to exactly one device (6.3). */
  signal(userId: string, deviceId: string | undefined, signal: unknown): void {
    const msg: Record<string, unknown> = { type: "webrtc_signal", peer_user_id: userId, signal };
    if (deviceId !== undefined) msg.peer_device_id = deviceId;
    this.conn.send(msg);
  }

  /** Own devices the relay reports online (13.8), kept by the sync engine. */
  get ownDevices(): ReadonlySet<string> {
    return this.sync.ownDeviceIds();
  }
}

/** A random 128-bit message id (seed 3.1), as 32 hex characters. */
export function newMessageId(): string {
  return bytesToHex(randomBytes(16));
}
