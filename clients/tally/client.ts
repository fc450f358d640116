// The Tally client apps use with a relay (the Tally protocol): send signed and encrypted messages through a
// persistent outbox with a stable id, receive envelopes from any path with the receiver's checks,
// dedup and receipts, and keep the ledger that sync (sync.ts) recovers and converges. The socket's
// life is in connection.ts, retries in outbox.ts, direct channels in direct.ts; protocol decisions
// come from shared/tally; which path a frame takes is in paths.ts. This file is the state machine
// that joins them.
import { sealEnvelope, type PeerEnvelope } from "../../shared/tally/envelope";
import { getPublicKeyHex, npubDecode, npubEncode } from "../../shared/tally/keys";
import { signInner } from "../../shared/tally/proof";
import type { ServerMessage } from "../../shared/tally/messages";
import { innerToLedgerEntry, type LedgerEntry } from "../../shared/tally/entry";
import { bytesToHex, randomBytes } from "../../shared/encoding";
import type { OutboxItem, TallyStore } from "./store";
import { CLIENT_LIMITS } from "./limits";
import { openDefaultStore } from "./default-store";
import { SyncEngine } from "./sync";
import { RelaySet, type Relay } from "./relays";
import { OutboxRetry } from "./outbox";
import { DirectChannels, type DirectChannel } from "./direct";
import { Paths } from "./paths";
import type { SendOptions, TallyClientOptions } from "./options";
import { Emitter, type Delivery, type InnerMessage, type TallyClientEvents } from "./events";
import { IGNORED, InboundPipeline, RECEIPT_TYPE, SELF_SYNC_TYPES } from "./inbound";
import { HandlerRegistry, type PayloadSchema } from "./handlers";

export type { Delivery, InnerMessage, TallyClientEvents } from "./events";
export type { PayloadSchema } from "./handlers";

export type { DirectChannel } from "./direct";
export type { SendOptions, TallyClientOptions } from "./options";
export { IGNORED, RECEIPT_TYPE, SELF_SYNC_TYPES };

export class TallyClient {
  readonly npub: string;
  readonly pubkeyHex: string;
  readonly store: TallyStore;
  readonly sync: SyncEngine;

  private readonly secretKey: Uint8Array;
  private readonly events = new Emitter<TallyClientEvents>();
  private readonly relays: RelaySet;
  private readonly paths: Paths;
  /** Relays whose attempt failed since connect() was called (connect rejects when all did). */
  private readonly failedAttempts = new Set<number>();
  private readonly outbox: OutboxRetry;
  private readonly channels = new DirectChannels();
  private readonly inbound: InboundPipeline;
  private readonly handlers = new HandlerRegistry();
  /** Frees the default store's slot for the next client (store-slots.ts). */
  private readonly releaseStore: () => void;
  /** Takes over what free slots of the default store left (slot-adopt.ts). */
  private readonly adoptSlots: () => Promise<void>;
  private pruneTimer: ReturnType<typeof setInterval> | undefined;
  private lastPrune = 0;
  private registeredWaiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];

  constructor(options: TallyClientOptions) {
    this.secretKey = options.secretKey;
    const acks = options.acks ?? true;
    this.pubkeyHex = getPublicKeyHex(options.secretKey);
    this.npub = npubEncode(this.pubkeyHex);
    const opened = openDefaultStore(this.npub, options.store);
    this.store = opened.store;
    this.releaseStore = opened.release;
    this.adoptSlots = opened.adopt;
    // The engines reach the client through small host objects, not through public members.
    this.sync = new SyncEngine(
      {
        npub: this.npub,
        store: this.store,
        connectPeer: (u) => this.connectPeer(u),
        syncNeedsRelay: (to) => this.paths.syncNeedsRelay(to),
        sendSyncMessage: (to, type, payload) => this.paths.sendSync(to, this.seal(to, type, payload)),
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
      sendReceipt: async (to, id, result) => this.paths.sendReceipt(to, this.seal(to, RECEIPT_TYPE, { message_id: id, result })),
      handlers: this.handlers,
      handlerRetryMs: options.handlerRetryMs ?? CLIENT_LIMITS.handler_retry_first_ms,
    });
    const urls = options.relayUrls ?? (options.relayUrl !== undefined ? [options.relayUrl] : []);
    this.relays = new RelaySet(
      urls,
      {
        secretKey: options.secretKey,
        npub: this.npub,
        acks,
        reconnect: options.reconnect ?? true,
        WebSocket: options.WebSocket ?? (globalThis as { WebSocket?: typeof WebSocket }).WebSocket,
        pingIntervalMs: options.pingIntervalMs,
        pongTimeoutMs: options.pongTimeoutMs,
        connectTimeoutMs: options.connectTimeoutMs,
      },
      { onMessage: (r, m) => this.onRelayMessage(r, m), onClosed: (r, code, reason) => this.onRelayClosed(r, code, reason) },
    );
    this.paths = new Paths(this.relays, this.channels, {
      npub: this.npub,
      acks,
      relayMode: options.relayMode ?? "all",
      ownDeviceIds: () => this.sync.ownDeviceIds(),
    });
    this.outbox = new OutboxRetry(
      this.store,
      { retryMs: options.retryMs ?? 5_000, maxRetryMs: options.maxRetryMs ?? 3_600_000 },
      (item) => this.paths.queue(item.envelope),
      (item) => void this.events.emit("expired", item.id, item.to_user_id),
    );
  }

  // ---- events -----------------------------------------------------------------------------

  /**
   * Listens to an event. A `message` listener sees every application message and is one of the
   * message's handlers (see `handle` for how several combine).
   */
  on<K extends keyof TallyClientEvents>(event: K, fn: TallyClientEvents[K]): () => void {
    if (event === "message") return this.handlers.add(undefined, fn as TallyClientEvents["message"]);
    return this.events.on(event, fn);
  }

  /**
   * Handles the application messages of one type. With `schema` (a zod schema, or anything with
   * its safeParse), the handler gets the parsed payload and is not run for a payload the schema
   * refuses. Handlers (these and `message` listeners) run in the order registered; the receipt's
   * result is the first string one returned (IGNORED keeps the message out of the ledger),
   * "processed" when none did, IGNORED when every applicable schema refused the payload. When one
   * throws, the message is run again soon, and the handlers that had returned are not run again
   * (`name` keeps a handler's mark across restarts; default its type and registration number).
   */
  handle<T = unknown>(
    type: string,
    /** Returns the receipt's result (a string, IGNORED among them), or nothing ("processed"); may be async. */
    fn: (message: InnerMessage & { payload: T }, via: Delivery) => unknown,
    opts: { schema?: PayloadSchema<T>; name?: string } = {},
  ): () => void {
    return this.handlers.add(type, fn as (m: never, v: never) => unknown, opts.schema as PayloadSchema<unknown> | undefined, opts.name);
  }

  // ---- the relays (relays.ts) -------------------------------------------------------------

  /** The device id the first registered relay gave this client (each relay gives its own). */
  get deviceId(): string | undefined {
    return this.relays.open().find((r) => r.deviceId !== undefined)?.deviceId;
  }

  /**
   * This client's device id at the relay that announced a peer device (peer_connect or
   * webrtc_signal): device ids are each relay's own, so a peer's id compares only with the id the
   * same relay gave this client (WebRTC roles, 6.3). Undefined when no registered relay announced it.
   */
  ownDeviceIdFor(userId: string, deviceId: string): string | undefined {
    return this.relays.relayOf(userId, deviceId)?.deviceId;
  }

  /** Registered with at least one relay. */
  get connected(): boolean {
    return this.relays.open().some((r) => r.deviceId !== undefined);
  }

  /** True once queue_drained arrived on a current connection (12.2). */
  get drained(): boolean {
    return this.relays.relays.some((r) => r.drained && r.conn.open);
  }

  /** The first relay's endpoint. */
  endpoint(): string {
    return this.relays.relays[0].conn.endpoint();
  }

  /** Every relay's endpoint, in the order given. */
  endpoints(): string[] {
    return this.relays.relays.map((r) => r.conn.endpoint());
  }

  /**
   * Connects to every relay and registers; resolves once the first `registered` arrived. Rejects
   * when every relay's first attempt failed: at once when the connections are refused, within
   * CLIENT_LIMITS.connect_timeout_ms when a relay never answers, and at once when the platform has
   * no WebSocket (Node 20: pass `ws`'s). With `reconnect` on, the client keeps trying each relay
   * in the background after a rejection.
   */
  connect(): Promise<void> {
    const done = new Promise<void>((resolve, reject) => this.registeredWaiters.push({ resolve, reject }));
    this.failedAttempts.clear();
    try {
      this.relays.start();
    } catch (err) {
      for (const w of this.registeredWaiters.splice(0)) w.reject(err as Error);
    }
    return done;
  }

  /** Closes every relay connection for good (no reconnect). */
  close(): void {
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    this.pruneTimer = undefined;
    this.inbound.stop();
    this.relays.stop();
    this.outbox.stop();
    this.sync.onClose();
    this.releaseStore();
  }

  /** The first relay's raw socket, for tests that must cut a connection the hard way. */
  get socket(): WebSocket | undefined {
    return this.relays.relays[0].conn.socket;
  }

  /** The raw socket of each relay, in the order given. */
  get sockets(): Array<WebSocket | undefined> {
    return this.relays.relays.map((r) => r.conn.socket);
  }

  private onRelayClosed(relay: Relay, code: number, reason: string): void {
    relay.deviceId = undefined;
    relay.drained = false;
    // The devices this relay announced are gone from its view; presence from other relays stays.
    for (const [user, device] of this.relays.dropDevicesOf(relay)) this.sync.onPeerDisconnect(user, device);
    if (!this.connected) {
      this.outbox.stop();
      this.sync.onClose();
    }
    void this.events.emit("close", code, reason, relay.url);
    this.failedAttempts.add(relay.index);
    if (this.failedAttempts.size >= this.relays.relays.length) {
      for (const w of this.registeredWaiters.splice(0)) w.reject(new Error(`relay closed the connection (${code} ${reason})`));
    }
  }

  private onRelayMessage(relay: Relay, msg: ServerMessage): void {
    switch (msg.type) {
      case "registered":
        relay.deviceId = msg.device_id;
        relay.drained = false;
        // 8.2, 8.3: a relay (re)registered: it may have restarted, everything is queued again.
        this.outbox.newSession();
        for (const w of this.registeredWaiters.splice(0)) w.resolve();
        void this.events.emit("registered", msg.device_id, msg.queued, relay.url);
        return;
      case "queue_drained":
        // Envelopes of the flush are processed in order before drained is announced.
        this.enqueueInbound(async () => {
          relay.drained = true;
          await this.events.emit("drained", relay.url);
          // A slot freed since (another tab or process closed): its outbox is sent from here.
          await this.adoptSlots();
          await this.outbox.flush(true);
          this.outbox.start();
          this.startPruning();
          await this.sync.onDrained();
        });
        return;
      case "peer_envelope":
        this.enqueueInbound(() => this.inbound.receiveEnvelope(msg, "relay", () => this.paths.ack(relay, msg)));
        return;
      case "queued":
        // "first" mode: a relay that did not store it (not_stored) hands the envelope on, as a refusal does.
        if (this.paths.firstMode && msg.status === "not_stored") void this.nextRelay(relay, msg.id);
        void this.events.emit("queued", msg.id, msg.status, relay.url);
        return;
      case "peer_connect":
        this.relays.noteDevice(relay, msg.peer_user_id, msg.peer_device_id);
        this.enqueueInbound(this.sync.onPeerConnect(msg.peer_user_id, msg.peer_device_id));
        void this.events.emit("peer_connect", msg.peer_user_id, msg.peer_device_id);
        return;
      case "peer_disconnect":
        this.relays.forgetDevice(msg.peer_user_id, msg.peer_device_id);
        this.sync.onPeerDisconnect(msg.peer_user_id, msg.peer_device_id);
        void this.events.emit("peer_disconnect", msg.peer_user_id, msg.peer_device_id);
        return;
      case "webrtc_signal":
        this.relays.noteDevice(relay, msg.peer_user_id, msg.peer_device_id);
        void this.events.emit("signal", msg.peer_user_id, msg.peer_device_id, msg.signal);
        return;
      case "error":
        if (this.paths.firstMode && msg.id !== undefined && msg.code !== "rate_limited") void this.nextRelay(relay, msg.id);
        void this.events.emit("relay_error", msg.code, msg.message, msg.id, relay.url);
        return;
      case "challenge":
      case "pong":
        return;
    }
  }

  /** "first" mode: a relay refused or did not store an outbox message; the next registered relay gets it now. */
  private async nextRelay(relay: Relay, id: string): Promise<void> {
    const item = await this.store.getOutbox(id);
    if (item) this.paths.queueAfter(relay, item.envelope);
  }

  /** Keeps the store within its bounds (TallyStore.prune): now (at most once a minute) and every prune_interval_ms. */
  private startPruning(): void {
    const prune = () => {
      if (!this.store.prune || Date.now() - this.lastPrune < 60_000) return;
      this.lastPrune = Date.now();
      this.store.prune().catch((err) => console.warn("tally client: pruning the store failed", err));
    };
    prune();
    this.pruneTimer ??= setInterval(prune, CLIENT_LIMITS.prune_interval_ms);
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
   * here): the checks of 5.3, dedup (7), receipts (8.1), and the relay ack. It waits its turn
   * behind every frame received before it, so two copies of one message never run the handler
   * twice (the processed check and its write would interleave).
   */
  receiveEnvelope(envelope: unknown, via: Delivery): Promise<void> {
    return this.enqueueInbound(() =>
      this.inbound.receiveEnvelope(envelope, via, via === "relay" ? () => this.paths.ack(undefined, envelope) : undefined),
    );
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
    const sentDirect = paths !== "relay" && this.paths.sendDirect(to, envelope) > 0;
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
    this.paths.queueEverywhere(envelope);
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
      return this.receiveEnvelope(msg, "direct");
    }
    if (msg.type === RECEIPT_TYPE && fromUserId === undefined) {
      return this.events.emit("dropped", "plaintext_receipt_without_peer", msg).then(() => undefined);
    }
    if (msg.type === RECEIPT_TYPE && fromUserId !== undefined && msg.from_user_id === fromUserId && msg.to_user_id === this.npub) {
      return this.enqueueInbound(() => this.inbound.onReceipt(fromUserId, msg.payload));
    }
    return Promise.resolve();
  }

  // ---- signaling --------------------------------------------------------------------------

  /** Asks every relay to introduce this device to every online device of `userId` there (6.3, 13.1). */
  connectPeer(userId: string): void {
    this.paths.connectPeer(userId);
  }

  /** Sends a WebRTC offer / answer / ICE candidate to exactly one device (6.3). */
  signal(userId: string, deviceId: string | undefined, signal: unknown): void {
    this.paths.signal(userId, deviceId, signal);
  }

  /** Own devices the relay reports online (13.8), kept by the sync engine. */
  get ownDevices(): ReadonlySet<string> {
    return this.sync.ownDeviceIds();
  }
}

/** A random 128-bit message id (the Tally protocol §3.1), as 32 hex characters. */
export function newMessageId(): string {
  return bytesToHex(randomBytes(16));
}
