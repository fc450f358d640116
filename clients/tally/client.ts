// The Tally client apps use with a relay (seed 003): register with a signed auth event, send
// signed and encrypted messages through a persistent outbox with retries and a stable id, receive
// envelopes with the receiver's checks, dedup and receipts, and signal WebRTC device by device.
// Protocol decisions come from shared/tally; this file is the state machine around a socket.
import { makeAuthEvent } from "../../shared/tally/auth";
import { openEnvelope, sealEnvelope, type PeerEnvelope } from "../../shared/tally/envelope";
import { getPublicKeyHex, npubDecode, npubEncode } from "../../shared/tally/keys";
import { signInner } from "../../shared/tally/proof";
import { serverMessageSchema, type QueuedStatus, type ServerMessage } from "../../shared/tally/messages";
import { bytesToHex, randomBytes } from "../../shared/encoding";
import { memoryStore, type OutboxItem, type TallyStore } from "./store";
import { innerToLedgerEntry, type LedgerEntry } from "../../shared/tally/ledger";
import { SyncEngine, type SyncOptions } from "./sync";
import { relayBase } from "../relay-url";
import { awaitListener } from "../listeners";

/** An inner message as the application sees it (seed section 3). */
export interface InnerMessage {
  id: string;
  type: string;
  from_user_id: string;
  to_user_id: string;
  created_at: string;
  payload?: unknown;
  [k: string]: unknown;
}

/** Receipt type (seed 8.1). */
export const RECEIPT_TYPE = "received";
/** Types that travel between one user's devices (self-envelopes, 13.8) and never get receipts. */
export const SELF_SYNC_TYPES = new Set(["sync_hello", "sync_data"]);

/** How a message reached this client: the relay, a direct channel, or ledger sync (12). */
export type Delivery = "relay" | "direct" | "sync";

export interface TallyClientEvents {
  /** A new application message (not a receipt), after the checks of 5.3 and dedup. */
  message: (inner: InnerMessage, via: Delivery) => void | Promise<void> | string;
  /** A copy of an application message already processed (another path's copy, 7): dropped, receipted again. */
  duplicate: (inner: InnerMessage, via: Delivery) => void;
  /** A receipt for one of our messages arrived; it left the outbox. */
  receipt: (messageId: string, result: unknown, from: string) => void;
  /** A self-addressed message from another of our devices (sync_hello / sync_data). */
  self: (inner: InnerMessage, via: Delivery) => void | Promise<void>;
  registered: (deviceId: string, queued: number) => void;
  drained: () => void;
  queued: (id: string, status: QueuedStatus) => void;
  peer_connect: (userId: string, deviceId: string) => void;
  peer_disconnect: (userId: string, deviceId: string) => void;
  signal: (userId: string, deviceId: string, signal: unknown) => void;
  /** An envelope that failed the receiver's checks and was dropped, with the reason. */
  dropped: (reason: string, envelope: unknown) => void;
  relay_error: (code: string, message: string, id?: string) => void;
  /** A new ledger entry (outbound or inbound, 12). */
  ledger: (entry: LedgerEntry) => void;
  /** A sync_data from `from` was applied: `applied` new entries. */
  synced: (from: string, applied: number) => void;
  /** 12.8: an unknown peer became a friend within its allowance and is kept. */
  peer_kept: (userId: string) => void;
  /** 12.8: an unknown peer's allowance ran out; it is dropped. */
  peer_dropped: (userId: string) => void;
  close: (code: number, reason: string) => void;
}

type Listener<K extends keyof TallyClientEvents> = TallyClientEvents[K];

export interface TallyClientOptions {
  /** The relay: ws(s)://, http(s):// or a bare host (clients/relay-url.ts); /tally/v1/<npub> is added. */
  relayUrl: string;
  secretKey: Uint8Array;
  store?: TallyStore;
  /** Ask the relay to keep envelopes until this device acks them (DESIGN section 4). Default true. */
  acks?: boolean;
  /** Reconnect after a lost connection, with backoff. Default true. */
  reconnect?: boolean;
  /** First retry delay for outbox items, doubled per attempt up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs?: number;
  /** Ledger sync (12, 13) settings. */
  sync?: SyncOptions;
  WebSocket?: typeof WebSocket;
}

export class TallyClient {
  readonly npub: string;
  readonly pubkeyHex: string;
  readonly store: TallyStore;
  deviceId: string | undefined;

  private readonly opts: Required<Omit<TallyClientOptions, "store" | "WebSocket" | "sync">> & { WebSocket: typeof WebSocket };
  readonly sync: SyncEngine;
  private ws: WebSocket | undefined;
  private listeners = new Map<keyof TallyClientEvents, Set<(...args: any[]) => unknown>>();
  /** 8.3: ids handed to the relay in this session; reset on every registration. */
  private queuedThisSession = new Set<string>();
  private inbound: Promise<void> = Promise.resolve();
  private retryTimer: ReturnType<typeof setInterval> | undefined;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private reconnectDelay = 500;
  private closedByUser = false;
  private registeredWaiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  private drainedFlag = false;
  /** Open direct channels (6.1) by peer user id. */
  private direct = new Map<string, Set<DirectChannel>>();

  constructor(options: TallyClientOptions) {
    this.opts = {
      acks: true,
      reconnect: true,
      retryMs: 5_000,
      maxRetryMs: 3_600_000,
      ...options,
      WebSocket: options.WebSocket ?? globalThis.WebSocket,
    } as typeof this.opts;
    this.pubkeyHex = getPublicKeyHex(options.secretKey);
    this.npub = npubEncode(this.pubkeyHex);
    this.store = options.store ?? memoryStore();
    this.sync = new SyncEngine(this, options.sync);
  }

  // ---- events -----------------------------------------------------------------------------

  on<K extends keyof TallyClientEvents>(event: K, fn: Listener<K>): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(fn as (...args: any[]) => unknown);
    return () => set!.delete(fn as (...args: any[]) => unknown);
  }

  private async emit<K extends keyof TallyClientEvents>(event: K, ...args: Parameters<TallyClientEvents[K]>) {
    const results: unknown[] = [];
    // A listener that throws is reported and counts as having returned nothing (clients/listeners.ts).
    for (const fn of this.listeners.get(event) ?? []) results.push(await awaitListener(event, fn, ...args));
    return results;
  }

  // ---- connection -------------------------------------------------------------------------

  get connected(): boolean {
    return this.deviceId !== undefined && this.ws?.readyState === 1;
  }

  /** True once queue_drained arrived on the current connection (12.2). */
  get drained(): boolean {
    return this.drainedFlag;
  }

  endpoint(): string {
    return `${relayBase(this.opts.relayUrl, "ws")}/tally/v1/${this.npub}`;
  }

  /** Connects and registers; resolves once `registered` arrived. */
  connect(): Promise<void> {
    this.closedByUser = false;
    const done = new Promise<void>((resolve, reject) => this.registeredWaiters.push({ resolve, reject }));
    this.open();
    return done;
  }

  private open(): void {
    const ws = new this.opts.WebSocket(this.endpoint());
    this.ws = ws;
    this.deviceId = undefined;
    this.drainedFlag = false;
    ws.onmessage = (ev) => {
      if (typeof ev.data === "string") this.onFrame(ws, ev.data);
    };
    ws.onclose = (ev) => this.onClosed(ws, ev.code, ev.reason);
    ws.onerror = () => {
      // onclose follows
    };
  }

  private onClosed(ws: WebSocket, code: number, reason: string): void {
    if (this.ws !== ws) return;
    this.ws = undefined;
    this.deviceId = undefined;
    if (this.retryTimer) clearInterval(this.retryTimer);
    this.retryTimer = undefined;
    this.sync.onClose();
    void this.emit("close", code, reason);
    const waiters = this.registeredWaiters.splice(0);
    // Authentication refused: do not retry, tell the caller.
    const fatal = code === 4001 || code === 1008;
    for (const w of waiters) w.reject(new Error(`relay closed the connection (${code} ${reason})`));
    if (!this.closedByUser && this.opts.reconnect && !fatal) {
      this.reconnectTimer = setTimeout(() => this.open(), this.reconnectDelay);
      this.reconnectDelay = Math.min(this.reconnectDelay * 2, 30_000);
    }
  }

  /** Closes the connection for good (no reconnect). */
  close(): void {
    this.closedByUser = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    if (this.retryTimer) clearInterval(this.retryTimer);
    this.sync.onClose();
    this.ws?.close(1000, "bye");
  }

  private sendFrame(msg: unknown): boolean {
    const ws = this.ws;
    if (!ws || ws.readyState !== 1) return false;
    ws.send(JSON.stringify(msg));
    return true;
  }

  // ---- frames from the relay --------------------------------------------------------------

  private onFrame(ws: WebSocket, data: string): void {
    let parsed: ServerMessage;
    try {
      const r = serverMessageSchema.safeParse(JSON.parse(data));
      if (!r.success) return;
      parsed = r.data;
    } catch {
      return;
    }
    const msg = parsed;
    switch (msg.type) {
      case "challenge": {
        const auth = makeAuthEvent({ secretKey: this.opts.secretKey, challenge: msg.challenge, relayUrl: relayBase(this.opts.relayUrl, "ws") });
        ws.send(JSON.stringify({ type: "register", user_id: this.npub, auth, acks: this.opts.acks }));
        return;
      }
      case "registered":
        this.deviceId = msg.device_id;
        this.reconnectDelay = 500;
        this.queuedThisSession.clear(); // 8.2, 8.3: the relay may have restarted
        for (const w of this.registeredWaiters.splice(0)) w.resolve();
        void this.emit("registered", msg.device_id, msg.queued);
        return;
      case "queue_drained":
        // Envelopes of the flush are processed in order before drained is announced.
        this.enqueueInbound(async () => {
          this.drainedFlag = true;
          await this.emit("drained");
          await this.flushOutbox(true);
          this.startRetryTimer();
          await this.sync.onDrained();
        });
        return;
      case "peer_envelope":
        this.enqueueInbound(() => this.receiveEnvelope(msg, "relay"));
        return;
      case "queued":
        void this.emit("queued", msg.id, msg.status);
        return;
      case "peer_connect":
        this.enqueueInbound(this.sync.onPeerConnect(msg.peer_user_id, msg.peer_device_id));
        void this.emit("peer_connect", msg.peer_user_id, msg.peer_device_id);
        return;
      case "peer_disconnect":
        this.sync.onPeerDisconnect(msg.peer_user_id, msg.peer_device_id);
        void this.emit("peer_disconnect", msg.peer_user_id, msg.peer_device_id);
        return;
      case "webrtc_signal":
        void this.emit("signal", msg.peer_user_id, msg.peer_device_id, msg.signal);
        return;
      case "error":
        void this.emit("relay_error", msg.code, msg.message, msg.id);
        return;
      case "pong":
        return;
    }
  }

  private enqueueInbound(task: () => Promise<void>): void {
    this.inbound = this.inbound.then(task).catch((err) => {
      console.error("tally client: inbound handler failed", err);
    });
  }

  /** Resolves once every frame received so far has been processed. */
  idle(): Promise<void> {
    return this.inbound;
  }

  /**
   * Receives one envelope from any path (the relay, or a direct channel that hands its frames
   * here): the checks of 5.3, dedup (7), receipts (8.1), and the relay ack.
   */
  async receiveEnvelope(envelope: unknown, via: Delivery): Promise<void> {
    const env = envelope as Partial<PeerEnvelope>;
    const opened = openEnvelope(envelope, this.opts.secretKey);
    if (!opened.ok) {
      await this.emit("dropped", opened.reason, envelope);
      this.ack(env, via);
      return;
    }
    const inner = opened.inner as InnerMessage;
    const from = inner.from_user_id;
    if (from === this.npub) {
      // Another device of ours (13.8): only sync messages on this path; no receipts (13.7);
      // sync messages stay out of the processed set (12.3), duplicates dropped by id.
      this.ack(env, via);
      if (SELF_SYNC_TYPES.has(inner.type) && this.sync.firstSight(inner)) {
        await this.emit("self", inner, via);
        await this.sync.onSyncMessage(inner);
      }
      return;
    }
    if (SELF_SYNC_TYPES.has(inner.type)) {
      // Friend sync (12): no processed set, never a receipt.
      this.ack(env, via);
      if (this.sync.firstSight(inner)) await this.sync.onSyncMessage(inner);
      return;
    }
    if (inner.type === RECEIPT_TYPE) {
      // A receipt never generates a receipt (8.1).
      const payload = (inner.payload ?? {}) as { message_id?: unknown; result?: unknown };
      if (typeof payload.message_id === "string") {
        const item = await this.store.getOutbox(payload.message_id);
        if (item && item.to_user_id === from) {
          await this.store.deleteOutbox(payload.message_id);
          await this.emit("receipt", payload.message_id, payload.result, from);
        }
      }
      this.ack(env, via);
      return;
    }
    if (await this.store.hasProcessed(from, inner.id)) {
      // Already processed: drop, but still receipt so a stuck sender can progress (7.2).
      this.ack(env, via);
      await this.emit("duplicate", inner, via);
      await this.sendReceipt(from, inner.id, "processed");
      return;
    }
    const results = await this.emit("message", inner, via);
    await this.store.addProcessed(from, inner.id, Date.now());
    await this.appendLedger(innerToLedgerEntry(inner, new Date()));
    this.ack(env, via);
    const result = results.find((r) => typeof r === "string") ?? "processed";
    await this.sendReceipt(from, inner.id, result as string);
  }

  private ack(env: Partial<PeerEnvelope>, via: Delivery): void {
    if (via !== "relay" || !this.opts.acks) return;
    if (typeof env.id === "string" && typeof env.from_user_id === "string") {
      this.sendFrame({ type: "ack", id: env.id, from_user_id: env.from_user_id });
    }
  }

  private async sendReceipt(to: string, messageId: string, result: string): Promise<void> {
    const inner = this.buildInner(to, RECEIPT_TYPE, { message_id: messageId, result });
    const envelope = sealEnvelope(signInner(inner, this.opts.secretKey), this.opts.secretKey);
    // Over a live direct channel when there is one (8.1), else through the relay.
    if (!this.sendDirect(to, envelope)) this.sendFrame({ type: "queue_peer_envelope", envelope });
  }

  // ---- sending ----------------------------------------------------------------------------

  private buildInner(to: string, type: string, payload: unknown, id?: string): InnerMessage {
    npubDecode(to); // throws on a bad npub
    return {
      id: id ?? newMessageId(),
      type,
      from_user_id: this.npub,
      to_user_id: to,
      created_at: new Date().toISOString(),
      payload,
    };
  }

  /**
   * Sends an application message: signed and sealed once, kept in the outbox until a receipt
   * arrives, retried with the same id and bytes. Returns the message id.
   */
  async send(to: string, type: string, payload: unknown, opts: SendOptions = {}): Promise<string> {
    if (to === this.npub) throw new Error("use sendToOwnDevices for self-addressed messages");
    const inner = this.buildInner(to, type, payload, opts.id);
    const signed = signInner(inner, this.opts.secretKey);
    const envelope = sealEnvelope(signed, this.opts.secretKey);
    const now = Date.now();
    const item: OutboxItem = { id: inner.id, to_user_id: to, envelope, created_at: now, attempts: 0, last_attempt_at: 0 };
    await this.store.putOutbox(item);
    await this.appendLedger(innerToLedgerEntry(signed, new Date(now)));
    const paths = opts.paths ?? "auto";
    const sentDirect = paths !== "relay" && this.sendDirect(to, envelope);
    // The relay is the fallback (6.2); "both" races the paths (9.5). With no receipt, the retry
    // timer hands the message to the relay later in any case.
    if (paths === "both" || paths === "relay" || (paths === "auto" && !sentDirect)) await this.tryQueue(item);
    return inner.id;
  }

  // ---- ledger and sync (12, 13) -----------------------------------------------------------

  /** Appends to the ledger; a new entry is announced and broadcast to own devices (13.5). */
  async appendLedger(entry: LedgerEntry): Promise<boolean> {
    if (!(await this.store.appendLedger(entry))) return false;
    this.sync.onLedgerAppend(entry);
    await this.emit("ledger", entry);
    return true;
  }

  /** An inbound-like entry from sync (12.7): applied once through the handler, no receipt. */
  async applyFromSync(inner: InnerMessage, entry: LedgerEntry): Promise<void> {
    if (!(await this.store.hasProcessed(inner.from_user_id, inner.id))) {
      await this.emit("message", inner, "sync");
      await this.store.addProcessed(inner.from_user_id, inner.id, Date.now());
    }
    await this.appendLedger(entry);
  }

  /**
   * Sends a sync message: to a friend over a direct channel if open, else through the relay; to
   * own devices (to === npub) over every direct channel, and through the relay as a self-addressed
   * envelope whenever some own device online has no channel (13.8).
   */
  sendSyncMessage(to: string, type: string, payload: unknown): void {
    const inner = this.buildInner(to, type, payload);
    const envelope = sealEnvelope(signInner(inner, this.opts.secretKey), this.opts.secretKey);
    const channels = this.direct.get(to)?.size ?? 0;
    const sentDirect = this.sendDirect(to, envelope);
    const needRelay = to === this.npub ? this.sync.ownDevicesOnline() > channels : !sentDirect;
    if (needRelay) this.sendFrame({ type: "queue_peer_envelope", envelope });
  }

  /** Closes and forgets the direct channels to a user (12.8: a dropped peer). */
  closeDirectChannels(userId: string): void {
    for (const ch of this.direct.get(userId) ?? []) {
      try {
        ch.close?.();
      } catch {
        // already closed
      }
    }
    this.direct.delete(userId);
  }

  async emitSyncEvent(event: "synced" | "peer_kept" | "peer_dropped", ...args: unknown[]): Promise<void> {
    await (this.emit as (e: string, ...a: unknown[]) => Promise<unknown[]>)(event, ...args);
  }

  // ---- direct channels --------------------------------------------------------------------

  /**
   * Registers an open direct channel to a peer (a WebRTC data channel, say): envelopes and
   * receipts for that user go over it first. Frames that arrive on it go to handleDirectFrame.
   * Returns a function that unregisters it.
   */
  addDirectChannel(userId: string, channel: DirectChannel): () => void {
    let set = this.direct.get(userId);
    if (!set) this.direct.set(userId, (set = new Set()));
    set.add(channel);
    return () => {
      set!.delete(channel);
      if (set!.size === 0) this.direct.delete(userId);
    };
  }

  /** A JSON frame that arrived on a direct channel (6.1). */
  handleDirectFrame(data: string): Promise<void> {
    let msg: unknown;
    try {
      msg = JSON.parse(data);
    } catch {
      return Promise.resolve();
    }
    if (typeof msg !== "object" || msg === null || (msg as { type?: unknown }).type !== "peer_envelope") {
      return Promise.resolve();
    }
    return new Promise((resolve) => this.enqueueInbound(() => this.receiveEnvelope(msg, "direct").then(resolve)));
  }

  private sendDirect(to: string, envelope: PeerEnvelope): boolean {
    let sent = false;
    for (const ch of this.direct.get(to) ?? []) {
      try {
        ch.send(JSON.stringify(envelope));
        sent = true;
      } catch {
        // a closing channel; the relay path remains
      }
    }
    return sent;
  }

  /** The sealed envelope of an outbox message, for a direct channel (6.1). */
  async outboxEnvelope(id: string): Promise<PeerEnvelope | undefined> {
    return (await this.store.getOutbox(id))?.envelope;
  }

  /** Sends a self-addressed message to this user's other online devices (13.2, 13.8). Never stored. */
  sendToOwnDevices(type: string, payload: unknown): string {
    const inner = this.buildInner(this.npub, type, payload);
    const envelope = sealEnvelope(signInner(inner, this.opts.secretKey), this.opts.secretKey);
    this.sendFrame({ type: "queue_peer_envelope", envelope });
    return inner.id;
  }

  private async tryQueue(item: OutboxItem): Promise<boolean> {
    if (!this.connected) return false;
    if (!this.sendFrame({ type: "queue_peer_envelope", envelope: item.envelope })) return false;
    this.queuedThisSession.add(item.id);
    item.attempts += 1;
    item.last_attempt_at = Date.now();
    await this.store.putOutbox(item);
    return true;
  }

  /**
   * Hands outbox messages to the relay: after registration every one not yet queued in this
   * session; on the retry timer, those whose backoff has passed.
   */
  async flushOutbox(afterRegister = false): Promise<void> {
    const now = Date.now();
    for (const item of await this.store.listOutbox()) {
      if (afterRegister) {
        if (this.queuedThisSession.has(item.id)) continue;
      } else {
        const backoff = Math.min(this.opts.retryMs * 2 ** Math.max(0, item.attempts - 1), this.opts.maxRetryMs);
        if (now - item.last_attempt_at < backoff) continue;
      }
      if (!(await this.tryQueue(item))) return;
    }
  }

  private startRetryTimer(): void {
    if (this.retryTimer) clearInterval(this.retryTimer);
    this.retryTimer = setInterval(() => void this.flushOutbox(false), Math.max(250, Math.floor(this.opts.retryMs / 2)));
  }

  // ---- signaling --------------------------------------------------------------------------

  /** Asks the relay to introduce this device to every online device of `userId` (6.3, 13.1). */
  connectPeer(userId: string): void {
    this.sendFrame({ type: "connect_peer", peer_user_id: userId });
  }

  /** Sends a WebRTC offer / answer / ICE candidate to exactly one device (6.3). */
  signal(userId: string, deviceId: string | undefined, signal: unknown): void {
    const msg: Record<string, unknown> = { type: "webrtc_signal", peer_user_id: userId, signal };
    if (deviceId !== undefined) msg.peer_device_id = deviceId;
    this.sendFrame(msg);
  }

  /** Own devices the relay reports online (13.8), kept by the sync engine. */
  get ownDevices(): ReadonlySet<string> {
    return this.sync.ownDeviceIds();
  }

  /** The raw socket, for tests that must cut a connection the hard way. */
  get socket(): WebSocket | undefined {
    return this.ws;
  }
}

/** A direct channel to one peer device: anything that carries a string frame (6.1). */
export interface DirectChannel {
  send(data: string): void;
  /** Called when the client drops the peer (12.8). */
  close?(): void;
}

export interface SendOptions {
  /** A message id chosen by the caller (it must be new); default a random 128-bit id. */
  id?: string;
  /** "auto": a direct channel if open, else the relay; "relay"; "direct"; "both" (9.5). */
  paths?: "auto" | "relay" | "direct" | "both";
}

/** A random 128-bit message id (seed 3.1), as 32 hex characters. */
export function newMessageId(): string {
  return bytesToHex(randomBytes(16));
}
