// One Minca code-channel room (docs/minca-rooms.md, the Minca protocol section 3): peers that proved a
// throwaway P-256 did:key, the welcome/peer/gone notices, and network messages relayed with
// `from` set to the sender's proven did and the payload passed on as it arrived, never read.
// The room lives 15 minutes from its first join, then closes every socket with 4008 and refuses
// joins for 24 hours; an alarm does both, and once the tombstone lapses the object deletes
// everything it stored. Decisions about bytes are in shared/minca/room.ts.
import { refusalSocket } from "../../server/refusal-socket";
import { SocketObject, clientOf, requestIdOf, type BaseAttachment, type RoutesOf } from "../base/socket-object";
import { MIGRATIONS } from "../../migrations/index";
import { CLOSE_CODES, MINCA_ROOM_LIMITS } from "../../shared/limits";
import { formatIssue, socketError } from "../../shared/errors";
import { rawMember } from "../../shared/json-raw";
import {
  checkJoin,
  deliveredFrame,
  isRoomId,
  joinSchema,
  newChallenge,
  outgoingSchema,
  roomTimes,
  type ClientMessage,
  type RelayMessage,
} from "../../shared/minca/room";

interface MincaRoomAttachment extends BaseAttachment {
  room: string;
  challenge: string;
  /** The proven did, once joined. */
  did?: string;
  /** Network messages this peer has sent. */
  sent: number;
}

type RoomRow = {
  room: string;
  first_join_at: number;
  expires_at: number;
  refuses_until: number;
  expired: number;
};

export class MincaRoom extends SocketObject<Env, MincaRoomAttachment, RelayMessage> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, {
      migrations: MIGRATIONS.MincaRoom,
      maxFrameBytes: MINCA_ROOM_LIMITS.max_message_bytes,
      beforeAuth: "error",
      protocol: "minca",
      // the room's sockets are capped (max_sockets): parked ones leave room for its peers
      maxUnauthenticatedInGrace: MINCA_ROOM_LIMITS.max_sockets - MINCA_ROOM_LIMITS.max_peers,
    });
  }

  protected socketGauges() {
    return { rooms_open: this.ctx.getWebSockets().length > 0 ? 1 : 0 };
  }

  // ---- state ----------------------------------------------------------------------------------

  private row(): RoomRow | undefined {
    if (!this.schema.exists) return undefined;
    return this.sql.exec<RoomRow>("SELECT room, first_join_at, expires_at, refuses_until, expired FROM room").toArray()[0];
  }

  private peers(except?: WebSocket): Array<{ ws: WebSocket; att: MincaRoomAttachment & { did: string } }> {
    return this.sockets((a) => a.authed && a.did !== undefined).filter((p) => p.ws !== except) as Array<{
      ws: WebSocket;
      att: MincaRoomAttachment & { did: string };
    }>;
  }

  /** Brings the room up to date with the clock; true when it refuses joins now. */
  private async refuses(now: number): Promise<boolean> {
    const row = this.row();
    if (!row) return false;
    if (now >= row.refuses_until) {
      if (this.ctx.getWebSockets().length === 0) await this.wipe();
      return false;
    }
    if (now >= row.expires_at) {
      if (!row.expired) this.expire();
      return true;
    }
    return false;
  }

  /** 15 minutes after the first join: every socket closes with 4008; the tombstone begins. */
  private expire(): void {
    this.sql.exec("UPDATE room SET expired = 1");
    for (const ws of this.ctx.getWebSockets()) {
      this.send(ws, socketError("room_expired", "this room has expired"));
      this.close(ws, CLOSE_CODES.room_expired, "room expired");
    }
  }

  // ---- connections ----------------------------------------------------------------------------

  async fetch(request: Request): Promise<Response> {
    const room = this.name;
    if (!isRoomId(room)) return new Response("not a Minca room's object", { status: 400 });
    const now = Date.now();
    if (await this.refuses(now)) return refusal("room_expired", "this room has expired and refuses joins", CLOSE_CODES.room_expired);
    if (this.ctx.getWebSockets().length >= MINCA_ROOM_LIMITS.max_sockets) {
      return refusal("room_full", `at most ${MINCA_ROOM_LIMITS.max_sockets} sockets per room`, CLOSE_CODES.policy);
    }
    return this.accept({
      openedAt: this.rateClock(),
      authed: false,
      client: clientOf(request),
      requestId: requestIdOf(request),
      room,
      challenge: newChallenge(),
      sent: 0,
    });
  }

  protected onConnect(ws: WebSocket, att: MincaRoomAttachment): void {
    this.send(ws, { type: "challenge", challenge: att.challenge });
  }

  protected routes: RoutesOf<MincaRoom, MincaRoomAttachment, ClientMessage> = {
    join: {
      schema: joinSchema,
      authed: false,
      handle(this: MincaRoom, ws, msg, att) {
        return this.join(ws, msg, att);
      },
    },
  };

  /** Whether the join proves its did for this room and challenge (a method, so that a test can hold it). */
  protected checkJoin(msg: { did: string; sig: string }, room: string, challenge: string): Promise<boolean> {
    return checkJoin(msg, room, challenge);
  }

  private async join(ws: WebSocket, msg: { did: string; sig: string }, att: MincaRoomAttachment): Promise<void> {
    if (att.authed) return this.sendError(ws, "already_joined", "this connection has already joined");
    if (!(await this.checkJoin(msg, att.room, att.challenge))) {
      this.logAuthFailure(ws, "the join does not prove its did for this room and challenge");
      this.sendError(ws, "auth_failed", "the join does not prove its did for this room and challenge");
      return this.close(ws, CLOSE_CODES.auth_failed, "authentication failed");
    }
    const now = Date.now();
    if (await this.refuses(now)) {
      this.sendError(ws, "room_expired", "this room has expired");
      return this.close(ws, CLOSE_CODES.room_expired, "room expired");
    }
    // The checks awaited: the socket may have closed, or joined through another join meanwhile.
    // From here to the admission, no await: two joins running alongside cannot both pass the
    // checks (one did in twice, or a ninth peer). The alarm is scheduled after.
    if (ws.readyState !== WebSocket.OPEN) return;
    att = this.attachment(ws);
    if (att.authed) return this.sendError(ws, "already_joined", "this connection has already joined");
    const others = this.peers(ws);
    if (others.some((p) => p.att.did === msg.did)) {
      this.sendError(ws, "did_in_room", "a peer with this did is already in the room");
      return this.close(ws, CLOSE_CODES.policy, "did already in room");
    }
    if (others.length >= MINCA_ROOM_LIMITS.max_peers) {
      this.sendError(ws, "room_full", `at most ${MINCA_ROOM_LIMITS.max_peers} peers per room`);
      return this.close(ws, CLOSE_CODES.policy, "room full");
    }
    let firstExpiry: number | undefined;
    if (!this.row()) {
      const { expiresAt, refusesUntil } = roomTimes(now);
      this.schema.ensure();
      this.sql.exec(
        "INSERT INTO room (id, room, first_join_at, expires_at, refuses_until) VALUES (1, ?, ?, ?, ?)",
        att.room,
        now,
        expiresAt,
        refusesUntil,
      );
      firstExpiry = expiresAt;
    }
    this.setAttachment(ws, { ...att, authed: true, did: msg.did, challenge: "" });
    this.send(ws, { type: "welcome", peers: others.map((p) => p.att.did) });
    for (const p of others) this.send(p.ws, { type: "peer", did: msg.did });
    if (firstExpiry !== undefined) await this.wakeAt(firstExpiry);
  }

  /** Every other type is a network message: relayed, with `from` set here, payload untouched. */
  protected async onUnrouted(
    ws: WebSocket,
    obj: Record<string, unknown> & { type: string },
    att: MincaRoomAttachment,
    raw: string,
  ): Promise<void> {
    const id = typeof obj.id === "string" ? obj.id : undefined;
    if (!att.authed || !att.did) return this.sendError(ws, "auth_failed", "join first", id);
    const parsed = outgoingSchema.safeParse(obj);
    if (!parsed.success) {
      return this.sendError(ws, "invalid_message", formatIssue(parsed.error), id);
    }
    if (await this.refuses(Date.now())) return;
    if (att.sent >= MINCA_ROOM_LIMITS.max_messages_per_peer) {
      return this.sendError(ws, "too_many_messages", `at most ${MINCA_ROOM_LIMITS.max_messages_per_peer} messages per peer`, id);
    }
    this.setAttachment(ws, { ...att, sent: att.sent + 1 });
    const msg = parsed.data;
    const targets = this.peers(ws).filter((p) => msg.to === undefined || p.att.did === msg.to);
    if (msg.to !== undefined && targets.length === 0) {
      return this.sendError(ws, "peer_unavailable", "no such peer in this room", id);
    }
    const frame = deliveredFrame(msg.type, att.did, rawMember(raw, "payload"));
    let n = 0;
    for (const t of targets) if (this.sendRaw(t.ws, frame)) n++;
    this.stats.count("deliveries", n);
  }

  protected async onClose(ws: WebSocket, att: MincaRoomAttachment): Promise<void> {
    if (att.authed && att.did) {
      for (const p of this.peers(ws)) this.send(p.ws, { type: "gone", did: att.did });
    }
    // A room nobody ever joined keeps nothing once its last socket is gone.
    const left = this.ctx.getWebSockets().filter((s) => s !== ws && s.readyState === WebSocket.OPEN);
    if (left.length === 0 && this.schema.exists && !this.row()) await this.wipe();
  }

  protected async onAlarm(now: number): Promise<number | null> {
    const row = this.row();
    if (!row) return null;
    if (now >= row.refuses_until) {
      for (const ws of this.ctx.getWebSockets()) this.close(ws, CLOSE_CODES.room_expired, "room expired");
      await this.wipe();
      return null;
    }
    if (now >= row.expires_at) {
      if (!row.expired) this.expire();
      return row.refuses_until;
    }
    return row.expires_at;
  }
}

/** The answer to a socket the room will not take (expired, or too many sockets): an error, then a close. */
function refusal(code: "room_expired" | "room_full", message: string, closeCode: number): Response {
  return refusalSocket(code, message, closeCode, code === "room_full" ? "room full" : "room expired");
}
