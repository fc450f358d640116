// The Tally client apps use with a relay (the Tally protocol): send signed and encrypted messages through a
// persistent outbox with a stable id, receive envelopes from any path with the receiver's checks,
// dedup and receipts, and keep the ledger that sync (sync.ts) recovers and converges. The socket's
// life is in connection.ts, retries in outbox.ts, direct channels in direct.ts; protocol decisions
// come from shared/tally; which path a frame takes is in paths.ts. This file is the state machine
// that joins them.
import type { PeerEnvelope } from "../../shared/tally/envelope";
import { npubEncode } from "../../shared/tally/keys";
import type { TallySigner } from "../../shared/tally/signer";
import type { LedgerEntry } from "../../shared/tally/entry";
import type { TallyStore } from "./store";
import { CLIENT_LIMITS } from "./limits";
import { openDefaultStore } from "./default-store";
import { SyncEngine } from "./sync";
import { RelaySet, type RelayStatus } from "./relays";
import { OutboxRetry } from "./outbox";
import { DirectChannels, type DirectChannel } from "./direct";
import { Paths } from "./paths";
import { connectionOptions, signerOf, type SendOptions, type TallyClientOptions } from "./options";
import { Emitter, type Delivery, type InnerMessage, type TallyClientEvents } from "./events";
import { IGNORED, InboundPipeline, RECEIPT_TYPE, SELF_SYNC_TYPES } from "./inbound";
import { HandlerRegistry, type PayloadSchema } from "./handlers";
import { Tracking, type MessageState, type Tracked } from "./tracking";
import { RelayFrames } from "./relay-frames";
import { historyOf, type HistoryPage, type HistoryQuery } from "./history";
import { joinTabs, type TabCoordinator } from "./tabs";
import { Sender } from "./sending";

export type { Delivery, InnerMessage, TallyClientEvents } from "./events";
export type { PayloadSchema } from "./handlers";
export type { MessageState, Receipt, RelayAnswer, Tracked } from "./tracking";

export type { DirectChannel } from "./direct";
export type { SendOptions, TallyClientOptions } from "./options";
export { IGNORED, RECEIPT_TYPE, SELF_SYNC_TYPES };
export { newMessageId } from "./sending";

export class TallyClient {
  readonly npub: string;
  readonly pubkeyHex: string;
  readonly store: TallyStore;
  readonly sync: SyncEngine;

  /** Signs and seals everything this client sends, opens what it receives, answers the relays' challenges. */
  private readonly signer: TallySigner;
  private readonly events = new Emitter<TallyClientEvents>();
  private readonly relays: RelaySet;
  private readonly paths: Paths;
  /** Relays whose attempt failed since connect() was called (connect rejects when all did). */
  private readonly failedAttempts = new Set<number>();
  private readonly outbox: OutboxRetry;
  private readonly channels = new DirectChannels();
  private readonly inbound: InboundPipeline;
  private readonly handlers = new HandlerRegistry();
  private readonly tracking = new Tracking();
  private readonly tabsOption: TallyClientOptions["tabs"];
  private tabs: TabCoordinator | undefined;
  private readonly sender: Sender;
  /** Frees the default store's slot for the next client (store-slots.ts). */
  private readonly releaseStore: () => void;
  /** Takes over what free slots of the default store left (slot-adopt.ts). */
  private readonly adoptSlots: () => Promise<void>;
  private readonly frames: RelayFrames;
  private readonly registeredWaiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];

  /**
   * A client whose key a signer holds (`signer`: a browser extension through `nip07Signer`, say):
   * its public key is asked of the signer first. With `secretKey`, the same as `new TallyClient`.
   */
  static async create(options: TallyClientOptions): Promise<TallyClient> {
    if (options.signer && options.publicKey === undefined)
      return new TallyClient({ ...options, publicKey: await options.signer.getPublicKey() });
    return new TallyClient(options);
  }

  /** With `secretKey`, or with `signer` and its `publicKey` (TallyClient.create asks the signer for it). */
  constructor(options: TallyClientOptions) {
    const { signer, pubkeyHex } = signerOf(options);
    this.signer = signer;
    this.pubkeyHex = pubkeyHex;
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
        sendSyncMessage: async (to, type, payload) => {
          const envelope = await this.sender.sealOrReport("sync", to, type, payload);
          return envelope !== undefined && this.paths.sendSync(to, envelope);
        },
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
      pubkeyHex: this.pubkeyHex,
      signer: this.signer,
      store: this.store,
      events: this.events,
      sync: this.sync,
      appendLedger: (e) => this.appendLedger(e),
      sendReceipt: async (to, id, result) => {
        const envelope = await this.sender.sealOrReport("receipt", to, RECEIPT_TYPE, { message_id: id, result });
        if (envelope) this.paths.sendReceipt(to, envelope);
      },
      handlers: this.handlers,
      onHandled: (inner) => this.tabs?.handled(inner),
      handlerRetryMs: options.handlerRetryMs ?? CLIENT_LIMITS.handler_retry_first_ms,
    });
    const urls = options.relayUrls ?? (options.relayUrl !== undefined ? [options.relayUrl] : []);
    this.relays = new RelaySet(
      urls,
      connectionOptions(options, signer, this.npub, (err) => void this.events.emit("signer_failed", "register", err)),
      { onMessage: (r, m) => this.frames.onMessage(r, m), onClosed: (r, code, reason) => this.frames.onClosed(r, code, reason) },
    );
    this.paths = new Paths(this.relays, this.channels, {
      npub: this.npub,
      acks: options.acks ?? true,
      relayMode: options.relayMode ?? "all",
      ownDeviceIds: () => this.sync.ownDeviceIds(),
    });
    this.outbox = new OutboxRetry(
      this.store,
      { retryMs: options.retryMs ?? 5_000, maxRetryMs: options.maxRetryMs ?? 3_600_000 },
      (item) => this.paths.queue(item.envelope),
      (item) => void this.events.emit("expired", item.id, item.to_user_id),
    );
    this.frames = new RelayFrames({
      relays: this.relays,
      sync: this.sync,
      outbox: this.outbox,
      events: this.events,
      paths: this.paths,
      inbound: this.inbound,
      tracking: this.tracking,
      store: this.store,
      failedAttempts: this.failedAttempts,
      registeredWaiters: this.registeredWaiters,
      connected: () => this.connected,
      adoptSlots: () => this.adoptSlots(),
    });
    this.sender = new Sender({
      npub: this.npub,
      pubkeyHex: this.pubkeyHex,
      signer: this.signer,
      store: this.store,
      outbox: this.outbox,
      tracking: this.tracking,
      paths: this.paths,
      tabs: () => this.tabs,
      appendLedger: (e) => this.appendLedger(e),
      signerFailed: (what, err) => this.events.emit("signer_failed", what, err).then(() => undefined),
    });
    this.tabsOption = options.tabs;
    this.sender.follow(this.events);
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
    if (this.tabsOption) return this.joinTabs(this.tabsOption);
    const done = new Promise<void>((resolve, reject) => this.registeredWaiters.push({ resolve, reject }));
    this.failedAttempts.clear();
    try {
      this.relays.start();
    } catch (err) {
      for (const w of this.registeredWaiters.splice(0)) w.reject(err as Error);
    }
    return done;
  }

  /**
   * With `tabs`: joins the user's other clients here; the relays are connected once this client
   * leads (at once when it is the only one). Resolves at once; `leader` says which it is.
   */
  private joinTabs(choice: NonNullable<TallyClientOptions["tabs"]>): Promise<void> {
    if (this.tabs) return Promise.resolve();
    const { npub, store, tracking, outbox, events } = this;
    const lead = () => {
      this.failedAttempts.clear();
      this.relays.start();
    };
    this.tabs = joinTabs(choice, { npub, store, tracking, outbox, events, lead });
    if (!this.tabs) return Promise.reject(new Error('tabs: "browser" needs navigator.locks and BroadcastChannel'));
    return Promise.resolve();
  }

  /** With `tabs`: whether this client leads (it alone connects to the relays and runs the handlers). */
  get leader(): boolean {
    return this.tabs?.leader ?? false;
  }

  /**
   * Closes every relay connection for good (no reconnect) at once; the promise resolves once the
   * writes under way (a `send` being stored, frames being handled) are done, and only then is the
   * default store's slot freed.
   */
  close(): Promise<void> {
    this.tabs?.close();
    this.frames.stop();
    this.inbound.stop();
    this.relays.stop();
    this.outbox.stop();
    this.sync.onClose();
    if (this.sender.pending.size === 0 && !this.inbound.busy) {
      this.releaseStore(); // nothing under way: the slot is free at once
      return Promise.resolve();
    }
    return Promise.allSettled([...this.sender.pending, this.inbound.idle()]).then(() => this.releaseStore());
  }

  /** One snapshot of every relay's state, in the order given (relays added later at the end). */
  status(): { relays: RelayStatus[]; connected: boolean; drained: boolean } {
    return { relays: this.relays.status(), connected: this.connected, drained: this.drained };
  }

  /** Adds a relay at run time (connected at once when the client is started); false if it is there already. */
  addRelay(url: string): boolean {
    return this.relays.add(url);
  }

  /** Removes a relay at run time: its connection closes for good; false if it was not there. */
  removeRelay(url: string): boolean {
    const relay = this.relays.relays.find((r) => r.url === url);
    if (!relay) return false;
    for (const [user, device] of this.relays.dropDevicesOf(relay)) this.sync.onPeerDisconnect(user, device);
    return this.relays.remove(url);
  }

  /**
   * The ledger, sorted by when each message was made (originated_at) and paged: newest first
   * unless `order: "asc"`; with `peer`, the conversation with that user only; `before`/`after`
   * bound the time (ms since the epoch); `cursor` is the previous page's `next`.
   */
  history(query: HistoryQuery = {}): Promise<HistoryPage> {
    return historyOf(this.store, this.npub, query);
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
    return this.inbound.enqueue(() =>
      this.inbound.receiveEnvelope(envelope, via, via === "relay" ? () => this.paths.ack(undefined, envelope) : undefined),
    );
  }

  // ---- sending (sending.ts) ---------------------------------------------------------------

  /**
   * Sends an application message: signed and sealed once, kept in the outbox until a receipt
   * arrives, retried with the same id and bytes. Returns the message id.
   */
  send(to: string, type: string, payload: unknown, opts: SendOptions = {}): Promise<string> {
    return this.sender.send(to, type, payload, opts);
  }

  /**
   * A message this client sent, to await: `queued` (the first relay's answer), `receipt` (rejects
   * when the message expires or is cancelled first). Works whenever it is asked: answers that came
   * before are remembered (the last TRACKED_MESSAGES messages).
   */
  track(id: string): Tracked {
    return this.tracking.track(id);
  }

  /** Sends, and returns the message to await (`send`, then `track`). */
  sendTracked(to: string, type: string, payload: unknown, opts: SendOptions = {}): Promise<Tracked> {
    return this.sender.sendTracked(to, type, payload, opts);
  }

  /** Where a message this client sent stands (tracking.ts MessageState). */
  messageState(id: string): Promise<MessageState> {
    return this.sender.messageState(id);
  }

  /** Every message in the outbox, oldest first, with its state. */
  outboxState(): Promise<Array<{ id: string; to: string; created_at: number } & MessageState>> {
    return this.sender.outboxState();
  }

  /**
   * Takes back a message no relay or channel has carried yet (state "unsent": sent while
   * offline); true if it was, false when it is gone already or has been handed on (then only its
   * receipt or its expiry ends it). Its `receipt` rejects.
   */
  cancel(id: string): Promise<boolean> {
    return this.sender.cancel(id);
  }

  /** Hands outbox messages to the relay (see OutboxRetry.flush). */
  flushOutbox(afterRegister = false): Promise<void> {
    return this.outbox.flush(afterRegister);
  }

  /** The sealed envelope of an outbox message, for a direct channel (6.1). */
  outboxEnvelope(id: string): Promise<PeerEnvelope | undefined> {
    return this.sender.outboxEnvelope(id);
  }

  /** Sends a self-addressed message to this user's other online devices (13.2, 13.8). Never stored. */
  sendToOwnDevices(type: string, payload: unknown): Promise<string> {
    return this.sender.sendToOwnDevices(type, payload);
  }

  // ---- ledger and sync (12, 13): what the sync engine asks of the client ------------------

  /** Appends to the ledger; a new entry is announced and broadcast to own devices (13.5). */
  private async appendLedger(entry: LedgerEntry): Promise<boolean> {
    if (!(await this.store.appendLedger(entry))) return false;
    await this.sync.onLedgerAppend(entry);
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
    return this.inbound.directFrame(data, fromUserId);
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
