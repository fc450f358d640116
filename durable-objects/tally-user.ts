// One Tally user: that user's devices (sockets), the queue of envelopes addressed to the user
// (kept by tally-queue.ts), and the introductions that decide who hears peer_disconnect (DESIGN
// section 4, seed 003 sections 6, 8, 9 and 13). Decisions about bytes live in shared/tally; this
// file holds state.
import type * as z from "zod";
import { OwnName } from "./own-name";
import { RelayObject, clientOf, type BaseAttachment, type Route } from "./base";
import { MIGRATIONS } from "../migrations/index";
import { CLOSE_CODES, TALLY_LIMITS } from "../shared/limits";
import { bytesToHex, randomBytes, utf8ByteLength } from "../shared/encoding";
import { rawMember } from "../shared/json-raw";
import { checkAuthEvent } from "../shared/tally/auth";
import { npubDecode, npubEncode } from "../shared/tally/keys";
import { peerEnvelopeSchema } from "../shared/tally/envelope";
import {
  ackSchema,
  connectPeerSchema,
  queuePeerEnvelopeSchema,
  registerSchema,
  signalFrame,
  webrtcSignalSchema,
  type QueuedStatus,
} from "../shared/tally/messages";
import { relayUrlMatches } from "../shared/tally/relay-url";
import { log } from "../shared/log";
import { OverLease } from "./storage-lease";
import { TallyQueue } from "./tally-queue";
import { TallyContacts } from "./tally-contacts";

export interface TallyAttachment extends BaseAttachment {
  challenge: string;
  /** This object's user (64 hex): the name it was addressed by, kept here until something is stored. */
  user?: string;
  /** Host the client connected to, for the auth event's relay tag. */
  host: string;
  deviceId?: string;
  acks?: boolean;
  /** When the socket was last heard from (registration or a message), refreshed at most every third of the idle bound. */
  seenAt?: number;
}

import { RELAY_HOST_HEADER, TALLY_USER_HEADER } from "../server/object-headers";
export { RELAY_HOST_HEADER, TALLY_USER_HEADER };

const IDLE_MS = TALLY_LIMITS.idle_timeout_seconds * 1000;

type Stub = DurableObjectStub<TallyUser>;

/**
 * What a recipient's object did with an envelope: a `queued` status, or `storage_full` when it
 * would have been stored but the relay-wide total of stored envelopes has no room (docs/hostile.md).
 */
export type Delivery = QueuedStatus | "storage_full";

/** An envelope waiting in the outbox for the RPC to its recipient's object. */
interface Outgoing {
  raw: string;
  fromHex: string;
  id: string;
  resolve: (status: Delivery) => void;
  reject: (err: unknown) => void;
}

/** One route of this object, typed with its attachment. */
const route = <S extends z.ZodType>(r: Route<TallyUser, TallyAttachment, S>) => r;

export class TallyUser extends RelayObject<Env, TallyAttachment> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, {
      migrations: MIGRATIONS.TallyUser,
      maxFrameBytes: TALLY_LIMITS.max_frame_bytes,
      beforeAuth: "ignore",
      protocol: "tally",
    });
  }

  /** The envelopes stored for this user, and its lease of the relay-wide total (storage.tally_bytes). */
  private readonly queue = new TallyQueue(this.ctx, this.env, this.schema);
  /** Whom this user exchanged envelopes with, and which of its devices met whose. */
  private readonly contacts = new TallyContacts(this.ctx, this.schema);

  /** RPC, the ledger's audit (storage-lease.ts): the lease this object recorded, in bytes. Reads only. */
  leaseHeld(): number {
    return this.queue.lease.bytes;
  }

  protected statsGauges() {
    return { envelopes_stored: this.queue.count() };
  }

  // ---- identity -----------------------------------------------------------------------------

  /** This object's user (64 hex), kept in its own storage. */
  private readonly user = new OwnName(this.schema, "user_hex");

  private userHex(): string | null {
    if (this.user.get() === null) {
      // Nothing stored yet, and a new instance: the name is in the sockets' attachments.
      for (const ws of this.ctx.getWebSockets()) {
        const hex = this.attachment(ws)?.user;
        if (hex) {
          this.remember(hex);
          return hex;
        }
      }
    }
    return this.user.get();
  }

  private remember(hex: string): void {
    this.user.claim(hex);
  }

  private userNpub(): string {
    return npubEncode(this.userHex()!);
  }

  /** Object ids of the users this one talks to (idFromName hashes), bounded: emptied when full. */
  private readonly peerIds = new Map<string, DurableObjectId>();

  private stubFor(hex: string): Stub {
    let id = this.peerIds.get(hex);
    if (id === undefined) {
      if (this.peerIds.size >= 1024) this.peerIds.clear();
      this.peerIds.set(hex, (id = this.env.TALLY_USER.idFromName(hex)));
    }
    return this.env.TALLY_USER.get(id);
  }

  // ---- connections --------------------------------------------------------------------------

  async fetch(request: Request): Promise<Response> {
    const hex = request.headers.get(TALLY_USER_HEADER);
    if (!hex || !/^[0-9a-f]{64}$/.test(hex)) return new Response("missing user", { status: 400 });
    this.remember(hex);
    return this.accept({
      openedAt: Date.now(),
      authed: false,
      client: clientOf(request),
      challenge: bytesToHex(randomBytes(32)),
      user: hex,
      host: request.headers.get(RELAY_HOST_HEADER) ?? new URL(request.url).host,
    });
  }

  protected onConnect(ws: WebSocket, att: TallyAttachment): void {
    this.send(ws, { type: "challenge", challenge: att.challenge });
  }

  private devices(except?: string): Array<{ ws: WebSocket; att: TallyAttachment & { deviceId: string } }> {
    return this.sockets((a) => a.authed && a.deviceId !== undefined && a.deviceId !== except) as Array<{
      ws: WebSocket;
      att: TallyAttachment & { deviceId: string };
    }>;
  }

  private device(deviceId: string): WebSocket | undefined {
    return this.devices().find((d) => d.att.deviceId === deviceId)?.ws;
  }

  protected routes = {
    register: route({
      schema: registerSchema,
      authed: false,
      handle(this: TallyUser, ws, msg, att) {
        return this.register(ws, msg, att);
      },
    }),
    queue_peer_envelope: route({
      schema: queuePeerEnvelopeSchema,
      handle(this: TallyUser, ws, msg, att, raw) {
        return this.queueEnvelope(ws, msg.envelope, att, raw);
      },
    }),
    ack: route({
      schema: ackSchema,
      handle(this: TallyUser, _ws, msg) {
        if (!this.schema.exists) return;
        this.queue.ack(npubDecode(msg.from_user_id), msg.id);
        this.stats.changed();
      },
    }),
    connect_peer: route({
      schema: connectPeerSchema,
      handle(this: TallyUser, ws, msg, att) {
        return this.connectPeer(ws, npubDecode(msg.peer_user_id), att);
      },
    }),
    webrtc_signal: route({
      schema: webrtcSignalSchema,
      handle(this: TallyUser, ws, msg, att) {
        return this.webrtcSignal(ws, msg.peer_user_id, msg.peer_device_id, msg.signal, att);
      },
    }),
  };

  private async register(
    ws: WebSocket,
    msg: { user_id: string; auth: unknown; acks?: boolean },
    att: TallyAttachment,
  ): Promise<void> {
    if (att.authed) return this.sendError(ws, "already_registered", "this connection is already registered");
    const me = this.userHex()!;
    let claimed: string;
    try {
      claimed = npubDecode(msg.user_id);
    } catch {
      claimed = "";
    }
    const fail = (why: string) => {
      this.sendError(ws, "auth_failed", why);
      this.close(ws, CLOSE_CODES.auth_failed, "authentication failed");
    };
    if (claimed !== me) return fail("user_id is not the user of this endpoint");
    const check = checkAuthEvent(msg.auth, {
      challenge: att.challenge,
      pubkeyHex: me,
      relayUrlOk: (url) => relayUrlMatches(url, att.host, this.env.PUBLIC_URL),
      nowSeconds: Math.floor(Date.now() / 1000),
    });
    if (!check.ok) return fail(`auth event refused: ${check.reason}`);
    const online = this.devices();
    if (online.length >= TALLY_LIMITS.max_devices_per_user) {
      this.sendError(ws, "too_many_devices", `at most ${TALLY_LIMITS.max_devices_per_user} devices per user`);
      return this.close(ws, CLOSE_CODES.policy, "too many devices");
    }
    const deviceId = bytesToHex(randomBytes(8));
    const next: TallyAttachment = { ...att, authed: true, deviceId, acks: msg.acks === true, challenge: "", seenAt: Date.now() };
    this.setAttachment(ws, next);
    await this.scheduleAlarm(Date.now() + IDLE_MS);
    this.contacts.pruneIntroductions(this.devices().map((d) => d.att.deviceId));

    // registered, the stored envelopes oldest first, queue_drained (seed 6.2 step 2).
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
    // Without acks the seed's rule holds: removed after a successful push.
    if (!next.acks && pushed > 0) this.queue.removeThrough(pushed);

    // Own devices meet each other (13.1).
    const npub = this.userNpub();
    for (const other of online) {
      this.send(ws, { type: "peer_connect", peer_user_id: npub, peer_device_id: other.att.deviceId });
      this.send(other.ws, { type: "peer_connect", peer_user_id: npub, peer_device_id: deviceId });
    }
  }

  // ---- envelopes ----------------------------------------------------------------------------

  private async queueEnvelope(
    ws: WebSocket,
    envelope: Record<string, unknown>,
    att: TallyAttachment,
    frame: string,
  ): Promise<void> {
    const id = typeof envelope.id === "string" ? envelope.id : undefined;
    const checked = peerEnvelopeSchema.safeParse(envelope);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      const where = issue?.path.length ? ` at envelope.${issue.path.join(".")}` : "";
      return this.sendError(ws, "invalid_message", `envelope: ${issue?.message ?? "invalid"}${where}`, id);
    }
    const env = checked.data;
    const raw = rawMember(frame, "envelope")!;
    const bytes = utf8ByteLength(raw);
    if (bytes > TALLY_LIMITS.max_envelope_bytes) {
      return this.sendError(ws, "envelope_too_large", `envelope is ${bytes} bytes; at most ${TALLY_LIMITS.max_envelope_bytes}`, env.id);
    }
    const me = this.userHex()!;
    const fromHex = npubDecode(env.from_user_id);
    if (fromHex !== me) {
      return this.sendError(ws, "forbidden_sender", "from_user_id is not the registered user", env.id);
    }
    const toHex = npubDecode(env.to_user_id);
    let status: Delivery;
    if (toHex === me) {
      // Self-addressed (13.8): to the sender's other online devices only, never stored.
      let n = 0;
      for (const d of this.devices(att.deviceId)) if (this.sendRaw(d.ws, raw)) n++;
      this.stats.count("deliveries", n);
      status = n > 0 ? "delivered" : "not_stored";
    } else {
      this.contacts.noteContact(toHex, "sent");
      status = await this.deliverTo(toHex, raw, fromHex, env.id);
    }
    if (status === "storage_full") {
      return this.sendError(ws, "storage_full", "the relay holds all the envelopes it may (storage.tally_bytes): not stored; send it again later", env.id);
    }
    this.send(ws, { type: "queued", id: env.id, to_user_id: env.to_user_id, status });
  }

  /**
   * Envelopes on their way to other users' objects, by recipient: while one RPC to a recipient's
   * object is in flight, the envelopes that follow for it wait and go together in the next one.
   * One RPC per batch instead of one per envelope, and envelopes from this user to that one
   * arrive in the order they were sent.
   */
  private readonly outbox = new Map<string, Outgoing[]>();

  /** Hands an envelope to its recipient's object; resolves with what that object did with it. */
  private deliverTo(toHex: string, raw: string, fromHex: string, id: string): Promise<Delivery> {
    return new Promise((resolve, reject) => {
      const waiting = this.outbox.get(toHex);
      const item = { raw, fromHex, id, resolve, reject };
      if (waiting) return void waiting.push(item); // a batch is in flight: go with the next one
      this.outbox.set(toHex, [item]);
      void this.sendOutbox(toHex);
    });
  }

  private async sendOutbox(toHex: string): Promise<void> {
    for (;;) {
      const queue = this.outbox.get(toHex)!;
      if (queue.length === 0) return void this.outbox.delete(toHex);
      const batch = queue.splice(0, TALLY_LIMITS.rpc_batch_envelopes);
      try {
        const statuses = await this.stubFor(toHex).deliverAll(
          toHex,
          batch.map((e) => [e.raw, e.fromHex, e.id] as [string, string, string]),
        );
        batch.forEach((e, k) => (statuses[k] ? e.resolve(statuses[k]) : e.reject(new Error(`delivery of ${e.id} failed`))));
      } catch (err) {
        for (const e of batch) e.reject(err);
      }
    }
  }

  /**
   * RPC: envelopes for this user from another user's object, in order; null where one failed.
   * Only an envelope whose storing outgrows this user's lease waits (for the ledger), and the
   * ones after it wait with it, so they stay in order.
   */
  async deliverAll(toHex: string, envelopes: Array<[raw: string, fromHex: string, id: string]>): Promise<Array<Delivery | null>> {
    const out: Array<Delivery | null> = [];
    for (const [raw, fromHex, id] of envelopes) {
      try {
        const now = this.deliverOne(toHex, raw, fromHex, id);
        out.push(now instanceof OverLease ? await this.deliverWithRoom(toHex, raw, fromHex, id, now) : now);
      } catch (err) {
        log.error("delivery failed", { err });
        out.push(null);
      }
    }
    return out;
  }

  /** RPC: an envelope for this user, from another user's object. */
  async deliver(toHex: string, raw: string, fromHex: string, id: string): Promise<Delivery> {
    const now = this.deliverOne(toHex, raw, fromHex, id);
    return now instanceof OverLease ? this.deliverWithRoom(toHex, raw, fromHex, id, now) : now;
  }

  /** Storing outgrew the lease: extend it once, then deliver again (a total with no room: storage_full). */
  private async deliverWithRoom(toHex: string, raw: string, fromHex: string, id: string, over: OverLease): Promise<Delivery> {
    if (!(await this.queue.lease.extend(over.total))) return "storage_full";
    const again = this.deliverOne(toHex, raw, fromHex, id);
    return again instanceof OverLease ? "storage_full" : again;
  }

  /** Delivers (and stores) one envelope now; an OverLease, with nothing stored or sent, when storing it outgrows the lease. */
  private deliverOne(toHex: string, raw: string, fromHex: string, id: string): QueuedStatus | OverLease {
    this.remember(toHex);
    const status = this.deliverNow(raw, fromHex, id);
    // A refused envelope leaves nothing behind, not even the contact it would have made.
    if (!(status instanceof OverLease)) this.contacts.noteContact(fromHex, "received");
    return status;
  }

  private deliverNow(raw: string, fromHex: string, id: string): QueuedStatus | OverLease {
    const devices = this.devices();
    if (devices.length > 0 && !devices.some((d) => d.att.acks)) {
      let n = 0;
      for (const d of devices) if (this.sendRaw(d.ws, raw)) n++;
      this.stats.count("deliveries", n);
      if (n > 0) return "delivered";
    }
    // Offline, or an acking device is online: store first, then push the stored form.
    const stored = this.store(raw, fromHex, id);
    if (stored instanceof OverLease) return stored;
    this.stats.changed();
    if (devices.length === 0) return stored ? "stored" : "not_stored";
    let n = 0;
    for (const d of devices) if (this.sendRaw(d.ws, stored ?? raw)) n++;
    this.stats.count("deliveries", n);
    return n > 0 ? "delivered" : stored ? "stored" : "not_stored";
  }

  /**
   * Stores an envelope (tally-queue.ts) and wakes the object when it expires; the stored form, or
   * null when it was not kept, or an OverLease when storing it outgrows the lease.
   */
  private store(raw: string, fromHex: string, id: string): string | null | OverLease {
    const kept = this.queue.store(raw, fromHex, id, Date.now());
    if (kept === null || kept instanceof OverLease) return kept;
    if (kept.expires !== null) void this.scheduleAlarm(kept.expires);
    return kept.body;
  }

  protected async onAlarm(now: number): Promise<number | null> {
    this.queue.purgeExpired(now);
    let next = this.queue.nextExpiry();
    if (await this.closeIdle(now)) next = Math.min(next ?? Infinity, now + IDLE_MS);
    return next;
  }

  // ---- idle sockets ---------------------------------------------------------------------------

  /**
   * A message wakes the object: note when the socket was last heard from, in its attachment (so
   * it survives hibernation), at most every third of the idle bound.
   */
  async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const att = this.attachment(ws);
    const now = Date.now();
    if (att?.authed && now - (att.seenAt ?? 0) > IDLE_MS / 3) this.setAttachment(ws, { ...att, seenAt: now });
    return super.webSocketMessage(ws, message);
  }

  /**
   * Closes registered sockets silent past the idle bound (half-open connections would otherwise
   * count as devices forever). Pings are answered by the runtime without waking the object, so the
   * last ping is read from getWebSocketAutoResponseTimestamp. Returns whether registered sockets remain.
   */
  private async closeIdle(now: number): Promise<boolean> {
    let remaining = false;
    for (const { ws, att } of this.devices()) {
      const pinged = this.ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? 0;
      const last = Math.max(att.seenAt ?? att.openedAt, pinged);
      if (now - last <= IDLE_MS) {
        remaining = true;
        continue;
      }
      this.close(ws, CLOSE_CODES.idle_timeout, "idle");
      await this.webSocketClose(ws, CLOSE_CODES.idle_timeout, "idle"); // its close may never come back
    }
    return remaining;
  }

  // ---- signaling ----------------------------------------------------------------------------

  private async connectPeer(ws: WebSocket, peerHex: string, att: TallyAttachment): Promise<void> {
    const me = this.userHex()!;
    const myNpub = this.userNpub();
    const myDevice = att.deviceId!;
    if (peerHex === me) {
      for (const other of this.devices(myDevice)) {
        this.send(ws, { type: "peer_connect", peer_user_id: myNpub, peer_device_id: other.att.deviceId });
        this.send(other.ws, { type: "peer_connect", peer_user_id: myNpub, peer_device_id: myDevice });
      }
      return;
    }
    // Presence only to users with an envelope exchange (decision in docs/tally.md): otherwise no
    // answer, as if the user were offline.
    if (!this.contacts.isContact(peerHex)) return;
    const theirDevices = await this.stubFor(peerHex).introduce(peerHex, me, myDevice);
    const peerNpub = npubEncode(peerHex);
    for (const d of theirDevices) {
      this.contacts.addIntroduction(myDevice, peerHex, d);
      this.send(ws, { type: "peer_connect", peer_user_id: peerNpub, peer_device_id: d });
    }
  }

  /** RPC: another user's device asks to meet this user's devices; returns their device ids. */
  async introduce(toHex: string, fromHex: string, fromDevice: string): Promise<string[]> {
    this.remember(toHex);
    const fromNpub = npubEncode(fromHex);
    const ids: string[] = [];
    for (const d of this.devices()) {
      this.contacts.addIntroduction(d.att.deviceId, fromHex, fromDevice);
      this.send(d.ws, { type: "peer_connect", peer_user_id: fromNpub, peer_device_id: fromDevice });
      ids.push(d.att.deviceId);
    }
    return ids;
  }

  private async webrtcSignal(
    ws: WebSocket,
    peerNpub: string,
    peerDevice: string | undefined,
    signal: unknown,
    att: TallyAttachment,
  ): Promise<void> {
    const json = JSON.stringify(signal);
    const bytes = utf8ByteLength(json);
    if (bytes > TALLY_LIMITS.max_signal_bytes) {
      return this.sendError(ws, "signal_too_large", `signal is ${bytes} bytes; at most ${TALLY_LIMITS.max_signal_bytes}`);
    }
    const me = this.userHex()!;
    const peerHex = npubDecode(peerNpub);
    const ok =
      peerHex === me
        ? this.deliverSignal(me, me, att.deviceId!, peerDevice, json)
        : await this.stubFor(peerHex).signal(peerHex, me, att.deviceId!, peerDevice ?? null, json);
    if (!ok) this.sendError(ws, "peer_unavailable", "no such online device of that user");
  }

  /** RPC: a webrtc_signal for one of this user's devices. */
  async signal(toHex: string, fromHex: string, fromDevice: string, toDevice: string | null, json: string): Promise<boolean> {
    this.remember(toHex);
    return this.deliverSignal(toHex, fromHex, fromDevice, toDevice ?? undefined, json);
  }

  private deliverSignal(meHex: string, fromHex: string, fromDevice: string, toDevice: string | undefined, json: string): boolean {
    let target: WebSocket | undefined;
    if (toDevice !== undefined) target = this.device(toDevice);
    else {
      // Without a device id: the peer's only device, if it has exactly one (other than the sender).
      const candidates = this.devices(meHex === fromHex ? fromDevice : undefined);
      if (candidates.length === 1) target = candidates[0].ws;
    }
    if (!target || (meHex === fromHex && toDevice === fromDevice)) return false;
    const frame = signalFrame(npubEncode(fromHex), fromDevice, json);
    return this.sendRaw(target, frame);
  }

  // ---- departures ---------------------------------------------------------------------------

  protected async onClose(_ws: WebSocket, att: TallyAttachment): Promise<void> {
    if (!att.authed || !att.deviceId) return;
    const me = this.userHex()!;
    const myNpub = npubEncode(me);
    const gone = att.deviceId;
    for (const other of this.devices(gone)) {
      this.send(other.ws, { type: "peer_disconnect", peer_user_id: myNpub, peer_device_id: gone });
    }
    const byPeer = this.contacts.takeIntroductions(gone);
    await Promise.allSettled(
      [...byPeer].map(([peerHex, devices]) => this.stubFor(peerHex).peerGone(peerHex, me, gone, devices)),
    );
  }

  /** RPC: a device of another user that was introduced to some of ours has gone. */
  async peerGone(toHex: string, fromHex: string, fromDevice: string, toDevices: string[]): Promise<void> {
    this.remember(toHex);
    const fromNpub = npubEncode(fromHex);
    for (const id of toDevices) {
      this.contacts.forgetIntroduction(id, fromHex, fromDevice);
      const ws = this.device(id);
      if (ws) this.send(ws, { type: "peer_disconnect", peer_user_id: fromNpub, peer_device_id: fromDevice });
    }
  }

  /**
   * RPC, the admin API's ban: closes this user's sockets (1008) and drops every envelope stored
   * for it; how many were dropped. The Worker refuses the user's upgrades from then on.
   */
  async purge(): Promise<number> {
    await this.shutdownSockets(CLOSE_CODES.policy, "banned by the relay's operator");
    return this.queue.purgeAll();
  }

  // ---- inspection (tests and the status page) -------------------------------------------------

  /** RPC: how many envelopes are stored for this user. */
  async queuedCount(): Promise<number> {
    return this.queue.count();
  }
}
