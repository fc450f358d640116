// One Tally user: that user's devices (sockets), the queue of envelopes addressed to the user
// (kept by tally-queue.ts), and the introductions that decide who hears peer_disconnect (docs/tally.md,
// the Tally protocol sections 6, 8, 9 and 13). Decisions about bytes live in shared/tally; this
// file holds state.
import { SocketObject, clientOf, requestIdOf, type BaseAttachment, type RoutesOf } from "../base/socket-object";
import { RELAY_HOST_HEADER, SHARED_CLIENT } from "../base/client-header";
import { MIGRATIONS } from "../../migrations/index";
import { CLOSE_CODES, TALLY_LIMITS } from "../../shared/limits";
import { bytesToHex, randomBytes } from "../../shared/encoding";
import { checkAuthEvent } from "../../shared/tally/auth";
import { npubDecode, npubEncode } from "../../shared/tally/keys";
import { ackSchema, connectPeerSchema, queuePeerEnvelopeSchema, registerSchema, webrtcSignalSchema } from "../../shared/tally/messages";
import type { ClientMessage, ServerMessage } from "../../shared/tally/messages";
import { relayUrlMatches } from "../../server/tally/relay-url";
import { log } from "../../server/log";
import { TallyQueue } from "./tally-queue";
import { TallyContacts } from "./tally-contacts";
import { HOLDS_NOTHING, type BatchAnswer, type Delivery, type EnvelopeCall } from "./envelope-batcher";
import { TallySending } from "./tally-sending";
import { TallySignaling, type PeerUser } from "./tally-signaling";
import { objectAt, objectId } from "../../server/objects";
import { BanMark } from "./tally-ban";
import { noteSeen, silentPast } from "./tally-idle";

export type { Delivery } from "./envelope-batcher";

interface TallyAttachment extends BaseAttachment {
  challenge: string;
  /** Host the client connected to, for the auth event's relay tag. */
  host: string;
  deviceId?: string;
  acks?: boolean;
  /** When the socket was last heard from (registration or a message), refreshed at most every third of the idle bound. */
  seenAt?: number;
}

export class TallyUser extends SocketObject<Env, TallyAttachment, ServerMessage> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, {
      migrations: MIGRATIONS.TallyUser,
      nameKey: "user_hex",
      maxFrameBytes: TALLY_LIMITS.max_frame_bytes,
      beforeAuth: "ignore",
      protocol: "tally",
    });
  }

  /** The envelopes stored for this user, and its lease of the relay-wide total (storage.tally_bytes). */
  private readonly queue: TallyQueue = new TallyQueue(this.ctx, this.deferred, this.env, this.schema, (hex: string): boolean =>
    this.contacts.wroteTo(hex),
  );
  /** Whom this user exchanged envelopes with, and which of its devices met whose. */
  private readonly contacts = new TallyContacts(this.ctx, this.schema, this.queue.lease, () => this.queue.held());
  /** The operator's ban of this user (the admin API), held here so that it holds in every isolate. */
  private readonly banMark = new BanMark(this.meta);
  /** What this user sends to other users: the share, the batches, the contacts it notes. */
  private readonly sending = new TallySending(
    {
      me: () => this.userHex(),
      devices: (except) => this.devices(except),
      send: (ws, msg) => this.send(ws, msg),
      sendRaw: (ws, data) => this.sendRaw(ws, data),
      sendError: (ws, code, message, id) => this.sendError(ws, code, message, id),
      countDeliveries: (n) => this.stats.count("deliveries", n),
      waitUntil: (p) => this.ctx.waitUntil(p),
      rateClock: () => this.rateClock(),
      recipient: (hex) => this.stubFor(hex),
      holdsNothing: () => this.queue.held() === 0,
    },
    this.contacts,
    this.deferred,
    this.meta,
    this.settings.storage.tally,
  );
  private readonly signaling = new TallySignaling(
    {
      me: () => this.userHex(),
      devices: (except) => this.devices(except).map((d) => ({ ws: d.ws, deviceId: d.att.deviceId })),
      send: (ws, msg) => this.send(ws, msg),
      sendRaw: (ws, data) => this.sendRaw(ws, data),
      sendError: (ws, code, message) => this.sendError(ws, code, message),
      peer: (hex) => this.peer(hex),
    },
    this.contacts,
  );

  /** RPC, the ledger's audit (storage-lease.ts): the lease this object recorded, in bytes. Reads only. */
  leaseHeld(): number {
    return this.queue.lease.bytes;
  }

  /** RPC, the ledger (storage-lease.ts): a claim elsewhere needs this lease's slack; the lease becomes what is held (null: busy). */
  leaseReclaim(): number | null {
    return this.queue.lease.reclaim();
  }

  protected socketGauges() {
    return { envelopes_stored: this.queue.count() };
  }

  /** The open sockets counted are the unauthenticated ones and the online devices: a device found silent past the idle bound is not one. */
  protected statsGauges() {
    const online = this.devices().length + this.sockets((a) => !a.authed).length;
    return { ...super.statsGauges(), connections: online };
  }

  // ---- identity -----------------------------------------------------------------------------

  /** This object's user (64 hex): the name it is addressed by. */
  private userHex(): string {
    const hex = this.name;
    if (hex === null) throw new Error("a Tally user object addressed without its user");
    return hex;
  }

  private userNpub(): string {
    return npubEncode(this.userHex());
  }

  /** Object ids of the users this one talks to (idFromName hashes), bounded: emptied when full. */
  private readonly peerIds = new Map<string, DurableObjectId>();

  private stubFor(hex: string) {
    let id = this.peerIds.get(hex);
    if (id === undefined) {
      if (this.peerIds.size >= 1024) this.peerIds.clear();
      id = objectId(this.env, "TALLY_USER", hex);
      this.peerIds.set(hex, id);
    }
    return objectAt(this.env, "TALLY_USER", id);
  }

  private peer(hex: string): PeerUser {
    return this.stubFor(hex) as unknown as PeerUser;
  }

  // ---- connections --------------------------------------------------------------------------

  async fetch(request: Request): Promise<Response> {
    if (!/^[0-9a-f]{64}$/.test(this.name ?? "")) return new Response("not a Tally user's object", { status: 400 });
    return this.accept({
      openedAt: this.rateClock(),
      authed: false,
      client: clientOf(request),
      requestId: requestIdOf(request),
      challenge: bytesToHex(randomBytes(32)),
      host: request.headers.get(RELAY_HOST_HEADER) ?? new URL(request.url).host,
    });
  }

  protected onConnect(ws: WebSocket, att: TallyAttachment): void {
    this.send(ws, { type: "challenge", challenge: att.challenge });
  }

  /**
   * The user's online devices (but `except`). A device silent past the idle bound is not one: it
   * is closed here with 4408 and its departure announced, as if its close had come (a half-open
   * connection's never does). This is the idle rule, read when it matters (tally-idle.ts): every
   * delivery, presence answer and count of devices goes through here, and no timer runs for it.
   */
  private devices(except?: string): Array<{ ws: WebSocket; att: TallyAttachment & { deviceId: string } }> {
    const now = Date.now();
    const out: Array<{ ws: WebSocket; att: TallyAttachment & { deviceId: string } }> = [];
    for (const d of this.sockets((a) => a.authed && a.deviceId !== undefined)) {
      if (silentPast(d.att, this.ctx.getWebSocketAutoResponseTimestamp(d.ws), now)) {
        this.closeSilent(d.ws);
        continue;
      }
      if (d.att.deviceId !== except) out.push(d as { ws: WebSocket; att: TallyAttachment & { deviceId: string } });
    }
    return out;
  }

  /** Closes a device found silent past the idle bound (4408) and runs its close now: its client may never answer. */
  private closeSilent(ws: WebSocket): void {
    this.close(ws, CLOSE_CODES.idle_timeout, "idle");
    this.ctx.waitUntil(
      this.webSocketClose(ws, CLOSE_CODES.idle_timeout, "idle").catch((err) => log.error("tally: a silent device's close failed", { err })),
    );
  }

  protected routes: RoutesOf<TallyUser, TallyAttachment, ClientMessage> = {
    register: {
      schema: registerSchema,
      authed: false,
      handle(this: TallyUser, ws, msg, att) {
        return this.register(ws, msg, att);
      },
    },
    queue_peer_envelope: {
      schema: queuePeerEnvelopeSchema,
      handle(this: TallyUser, ws, msg, att, raw) {
        return this.sending.queueEnvelope(ws, msg.envelope, { deviceId: att.deviceId!, client: att.client ?? SHARED_CLIENT }, raw);
      },
    },
    ack: {
      schema: ackSchema,
      handle(this: TallyUser, _ws, msg) {
        if (!this.schema.exists) return;
        this.queue.ack(npubDecode(msg.from_user_id), msg.id);
        this.stats.changed();
      },
    },
    connect_peer: {
      schema: connectPeerSchema,
      handle(this: TallyUser, ws, msg, att) {
        return this.signaling.connectPeer(ws, npubDecode(msg.peer_user_id), att.deviceId!);
      },
    },
    webrtc_signal: {
      schema: webrtcSignalSchema,
      handle(this: TallyUser, ws, msg, att) {
        return this.signaling.webrtcSignal(ws, msg.peer_user_id, msg.peer_device_id, msg.signal, att.deviceId!);
      },
    },
  };

  private async register(ws: WebSocket, msg: { user_id: string; auth: unknown; acks?: boolean }, att: TallyAttachment): Promise<void> {
    if (att.authed) return this.sendError(ws, "already_registered", "this connection is already registered");
    const me = this.userHex();
    let claimed: string;
    try {
      claimed = npubDecode(msg.user_id);
    } catch {
      claimed = "";
    }
    const fail = (why: string) => {
      this.logAuthFailure(ws, why);
      this.sendError(ws, "auth_failed", why);
      this.close(ws, CLOSE_CODES.auth_failed, "authentication failed");
    };
    if (claimed !== me) return fail("user_id is not the user of this endpoint");
    const check = checkAuthEvent(msg.auth, {
      challenge: att.challenge,
      pubkeyHex: me,
      relayUrlOk: (url) => relayUrlMatches(url, att.host, this.settings.publicUrls),
      nowSeconds: Math.floor(Date.now() / 1000),
    });
    if (!check.ok) return fail(`auth event refused: ${check.reason}`);
    if (this.banMark.banned) {
      this.sendError(ws, "banned", "this key is banned by the relay's operator");
      return this.close(ws, CLOSE_CODES.policy, "banned");
    }
    const online = this.devices();
    if (online.length >= TALLY_LIMITS.max_devices_per_user) {
      this.sendError(ws, "too_many_devices", `at most ${TALLY_LIMITS.max_devices_per_user} devices per user`);
      return this.close(ws, CLOSE_CODES.policy, "too many devices");
    }
    const deviceId = bytesToHex(randomBytes(8));
    const next: TallyAttachment = { ...att, authed: true, deviceId, acks: msg.acks === true, challenge: "", seenAt: Date.now() };
    this.setAttachment(ws, next);
    this.contacts.pruneIntroductions(this.devices().map((d) => d.att.deviceId));

    // registered, the stored envelopes oldest first, queue_drained (the Tally protocol §6.2 step 2).
    this.queue.purgeExpired(Date.now());
    const rows = this.queue.pending();
    this.send(ws, { type: "registered", user_id: this.userNpub(), device_id: deviceId, queued: rows.length });
    let pushed = 0;
    let n = 0;
    for (const row of rows) {
      if (!this.sendRaw(ws, row.body)) break;
      pushed = row.seq;
      n++;
    }
    this.stats.count("deliveries", n);
    this.send(ws, { type: "queue_drained" });
    // Without acks the Tally protocol's rule holds: removed after a successful push.
    if (!next.acks && pushed > 0) this.queue.removeThrough(pushed);

    // Own devices meet each other (13.1).
    this.signaling.registered(
      ws,
      deviceId,
      online.map((d) => ({ ws: d.ws, deviceId: d.att.deviceId })),
    );
  }

  // ---- envelopes ----------------------------------------------------------------------------

  /**
   * RPC: envelopes for this user from another user's object, in order; null where one failed.
   * Only an envelope whose storing outgrows this user's lease waits (for the ledger), and the
   * ones after it wait with it, so they stay in order.
   */
  async deliverAll(envelopes: EnvelopeCall[]): Promise<BatchAnswer> {
    const out: BatchAnswer = [];
    for (const [raw, fromHex, id, mayStore] of envelopes) {
      try {
        out.push(await this.deliver(raw, fromHex, id, mayStore !== false));
      } catch (err) {
        log.error("delivery failed", { err });
        out.push(null);
      }
    }
    // No storage, so no alarm: the sender asks this object to report after its burst (reportNow).
    if (!this.schema.exists) out.push(HOLDS_NOTHING);
    return out;
  }

  /**
   * RPC, from a user's object that handed this one envelopes in a burst: an object that holds no
   * storage has no alarm, so its counts since its last report go now, at the end of this call.
   */
  async reportNow(): Promise<void> {
    if (!this.schema.exists) this.deferred.runAtExit();
  }

  /**
   * RPC, the admin API's banpubkey: marks this user banned (tally-ban.ts: its register is refused,
   * envelopes to it are not stored), closes its sockets (1008), drops every envelope stored for it
   * and its contacts, and has every user it sent envelopes to (its contacts it wrote to) drop those
   * it sent them; how many envelopes were dropped here and there.
   */
  async ban(): Promise<{ received: number; sent: number }> {
    this.banMark.set(Date.now());
    await this.shutdownSockets(CLOSE_CODES.policy, "banned by the relay's operator");
    const recipients = this.contacts.sentTo();
    this.contacts.forgetAll();
    const received = this.queue.purgeAll();
    this.stats.changed(); // the status page's stored count catches up, with no socket left to report it
    const me = this.userHex();
    const sent = await Promise.all(
      recipients.map((hex) =>
        this.stubFor(hex)
          .purgeFrom(me)
          .catch((err: unknown) => {
            log.warn("tally: a banned sender's envelopes could not be purged from a recipient", { err });
            return 0;
          }),
      ),
    );
    return { received, sent: sent.reduce((a, b) => a + b, 0) };
  }

  /** RPC: drops every envelope `fromHex` sent this user (the operator banned that sender); how many. */
  async purgeFrom(fromHex: string): Promise<number> {
    const n = this.queue.purgeFrom(fromHex);
    if (n > 0) this.stats.changed();
    return n;
  }

  /** RPC, the admin API's unbanpubkey: the user may register and receive envelopes again. */
  async unban(): Promise<void> {
    this.banMark.clear();
  }

  /**
   * Delivers one envelope for this user (the Tally protocol §6.2): pushed at once to the online devices that do
   * not ack; stored first when no device is online or one acks, then pushed in its stored form.
   * When the relay-wide total has no room to store it, the online devices still get it as it
   * arrived (step 1: deliver to online devices): "delivered" if one took it, else storage_full.
   */
  private async deliver(raw: string, fromHex: string, id: string, mayStore = true): Promise<Delivery> {
    if (this.banMark.banned) return "not_stored"; // nothing kept for a banned user, nothing leased
    const devices = this.devices();
    if (devices.length > 0 && !devices.some((d) => d.att.acks)) {
      const n = this.push(devices, raw);
      if (n > 0) return this.delivered("delivered", fromHex);
    }
    // Offline, or an acking device is online: store first, then push the stored form.
    // A sender past its share (sender-share.ts) is not stored: as when the total is full, but not_stored.
    const stored = mayStore ? await this.store(raw, fromHex, id) : "storage_full";
    const online = this.devices();
    if (stored === "storage_full") {
      // Not stored: a device that does not ack takes it as it is, and so does an acking one (it
      // acks an envelope the relay does not hold: nothing to delete).
      if (this.push(online, raw) > 0) return this.delivered("delivered", fromHex);
      return mayStore ? "storage_full" : "not_stored";
    }
    this.stats.changed();
    const n = online.length > 0 ? this.push(online, stored ?? raw) : 0;
    if (n > 0) return this.delivered("delivered", fromHex);
    // Refused by the queue's bounds and taken by no device: nothing of it is kept, not even a contact.
    return stored === null ? "not_stored" : this.delivered("stored", fromHex);
  }

  /** Sends one envelope to each device; how many took it. */
  private push(devices: Array<{ ws: WebSocket }>, raw: string): number {
    let n = 0;
    for (const d of devices) if (this.sendRaw(d.ws, raw)) n++;
    this.stats.count("deliveries", n);
    return n;
  }

  /**
   * An envelope was handed on or kept (nothing is written for it beyond its own row: a contact is
   * kept by the user who wrote). Presence is not told to strangers: to a sender this user never
   * wrote to, "delivered" is answered "stored" (and charged to its share as stored), the same
   * whether or not a device of this user was online.
   */
  private delivered(status: Delivery, fromHex: string): Delivery {
    return status === "delivered" && !this.contacts.wroteTo(fromHex) ? "stored" : status;
  }

  /**
   * Stores an envelope (tally-queue.ts) and wakes the object when it expires; the stored form, or
   * null when it was not kept, or "storage_full".
   */
  private async store(raw: string, fromHex: string, id: string): Promise<string | null | "storage_full"> {
    const kept = await this.queue.store(raw, fromHex, id, Date.now());
    if (kept === null || kept === "storage_full") return kept;
    if (kept.expires !== null) void this.wakeAt(kept.expires);
    return kept.body;
  }

  /** The alarm is for stored envelopes that expire only, at the earliest expiry (never for sockets: idle costs nothing). */
  protected async onAlarm(now: number): Promise<number | null> {
    this.queue.purgeExpired(now);
    return this.queue.nextExpiry();
  }

  // ---- idle sockets ---------------------------------------------------------------------------

  /** A message wakes the object: note when the socket was last heard from, in its attachment (so it survives hibernation). */
  async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const att = this.attachment(ws);
    const now = Date.now();
    if (att && noteSeen(att, now)) this.setAttachment(ws, { ...att, seenAt: now });
    return super.webSocketMessage(ws, message);
  }

  // ---- signaling (tally-signaling.ts) -------------------------------------------------------

  /** RPC: another user's device asks to meet this user's devices; returns their device ids. */
  async introduce(fromHex: string, fromDevice: string): Promise<string[]> {
    return this.signaling.introduce(fromHex, fromDevice);
  }

  /** RPC: a webrtc_signal for one of this user's devices. */
  async signal(fromHex: string, fromDevice: string, toDevice: string | null, json: string): Promise<boolean> {
    return this.signaling.deliverSignal(fromHex, fromDevice, toDevice ?? undefined, json);
  }

  protected async onClose(_ws: WebSocket, att: TallyAttachment): Promise<void> {
    if (att.authed && att.deviceId) await this.signaling.left(att.deviceId);
  }

  /** RPC: a device of another user that was introduced to some of ours has gone. */
  async peerGone(fromHex: string, fromDevice: string, toDevices: string[]): Promise<void> {
    this.signaling.peerGone(fromHex, fromDevice, toDevices);
  }
}
