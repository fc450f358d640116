// One Passnote sync room (docs/passnote.md): the group's devices, each a socket that proved the
// room key, and the routing of their binary frames by 8-byte peer id, byte-exact and in order
// per sender. The relay never looks inside a frame; the join proof is checked in shared/passnote.
import { SocketObject, clientOf, requestIdOf, type BaseAttachment, type RoutesOf } from "../base/socket-object";
import { MIGRATIONS } from "../../migrations/index";
import { CLOSE_CODES, PASSNOTE_LIMITS } from "../../shared/limits";
import { base64urlEncode, bytesToHex, hexToBytes, randomBytes } from "../../shared/encoding";
import { joinSchema, type ClientMessage, type RoomServerMessage } from "../../shared/passnote/messages";
import { BROADCAST, PEER_ID_BYTES, isBroadcastFrame, restampPeerFrame, verifyJoin } from "../../shared/passnote/room";

interface PassnoteAttachment extends BaseAttachment {
  /** base64url of the 32 challenge bytes; emptied once joined. */
  challenge: string;
  /** The room id (the key joins are verified under): the name the object is addressed by. */
  room: string;
  /** This socket's peer id (16 hex), once joined. */
  peer?: string;
}

type Joined = { ws: WebSocket; att: PassnoteAttachment & { peer: string } };

export class PassnoteRoom extends SocketObject<Env, PassnoteAttachment, RoomServerMessage> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, {
      migrations: MIGRATIONS.PassnoteRoom,
      maxFrameBytes: PASSNOTE_LIMITS.max_frame_bytes,
      maxBinaryBytes: PASSNOTE_LIMITS.max_binary_bytes,
      beforeAuth: "error",
      protocol: "passnote",
      nameKey: "room",
    });
  }

  protected socketGauges() {
    return { rooms_open: this.ctx.getWebSockets().length > 0 ? 1 : 0 };
  }

  async fetch(request: Request): Promise<Response> {
    // A room stores nothing (its peers live in their sockets): its id is the name it is addressed by.
    const room = this.name;
    if (!room) return new Response("not a Passnote room's object", { status: 400 });
    return this.accept({
      openedAt: this.rateClock(),
      authed: false,
      client: clientOf(request),
      requestId: requestIdOf(request),
      challenge: base64urlEncode(randomBytes(32)),
      room,
    });
  }

  protected onConnect(ws: WebSocket, att: PassnoteAttachment): void {
    this.send(ws, { type: "challenge", challenge: att.challenge });
  }

  private peers(except?: string): Joined[] {
    return this.sockets((a) => a.authed && a.peer !== undefined && a.peer !== except) as Joined[];
  }

  protected routes: RoutesOf<PassnoteRoom, PassnoteAttachment, ClientMessage> = {
    join: {
      schema: joinSchema,
      authed: false,
      handle(this: PassnoteRoom, ws, msg, att) {
        return this.join(ws, msg.sig, att);
      },
    },
  };

  /** Whether `sig` signs `challenge` under the room key (a method, so that a test can hold it). */
  protected verifyJoin(room: string, challenge: string, sig: string): Promise<boolean> {
    return verifyJoin(room, challenge, sig);
  }

  private async join(ws: WebSocket, sig: string, att: PassnoteAttachment): Promise<void> {
    if (att.authed) return this.sendError(ws, "already_joined", "this connection has already joined");
    if (!(await this.verifyJoin(att.room, att.challenge, sig))) {
      this.logAuthFailure(ws, "the join signature does not verify under the room key");
      this.sendError(ws, "auth_failed", "the join signature does not verify under the room key");
      return this.close(ws, CLOSE_CODES.auth_failed, "authentication failed");
    }
    // The check awaited: the socket may have closed, or joined through another join meanwhile.
    // From here to the admission, no await (the room's count and the peer ids are read fresh).
    if (ws.readyState !== WebSocket.OPEN) return;
    att = this.attachment(ws);
    if (att.authed) return this.sendError(ws, "already_joined", "this connection has already joined");
    const others = this.peers();
    if (others.length >= PASSNOTE_LIMITS.max_peers_per_room) {
      this.sendError(ws, "room_full", `at most ${PASSNOTE_LIMITS.max_peers_per_room} peers per room`);
      return this.close(ws, CLOSE_CODES.policy, "room full");
    }
    const taken = new Set(others.map((o) => o.att.peer));
    let peer: string;
    do peer = bytesToHex(randomBytes(8));
    while (peer === BROADCAST || taken.has(peer));
    this.setAttachment(ws, { ...att, authed: true, challenge: "", peer });
    this.send(ws, { type: "welcome", peer, peers: others.map((o) => o.att.peer) });
    for (const o of others) this.send(o.ws, { type: "join", peer });
  }

  /** Each joined socket's peer id as bytes (keyed by its attachment, which is replaced on change). */
  private readonly peerBytes = new WeakMap<PassnoteAttachment, Uint8Array>();

  private senderId(att: PassnoteAttachment): Uint8Array {
    let id = this.peerBytes.get(att);
    if (id === undefined) {
      id = hexToBytes(att.peer!);
      this.peerBytes.set(att, id);
    }
    return id;
  }

  // The hot path of a room: no per-peer allocation, the frame rewritten in place (it is ours).
  protected onBinary(ws: WebSocket, data: ArrayBuffer, att: PassnoteAttachment): void {
    const bytes = new Uint8Array(data);
    if (bytes.length < PEER_ID_BYTES) {
      this.sendError(ws, "invalid_message", "a binary message starts with an 8-byte peer id");
      return;
    }
    if (isBroadcastFrame(bytes)) {
      const out = restampPeerFrame(bytes, this.senderId(att));
      let n = 0;
      for (const o of this.ctx.getWebSockets()) {
        if (o === ws) continue;
        const a = this.attachment(o) as PassnoteAttachment | null;
        if (a?.authed && a.peer !== undefined && a.peer !== att.peer && this.sendRaw(o, out)) n++;
      }
      this.stats.count("deliveries", n);
      return;
    }
    const to = bytesToHex(bytes.subarray(0, PEER_ID_BYTES));
    const target = to === att.peer ? undefined : this.peers().find((o) => o.att.peer === to);
    if (!target || !this.sendRaw(target.ws, restampPeerFrame(bytes, this.senderId(att)))) {
      this.sendError(ws, "peer_unavailable", `no other peer ${to} in this room`);
    } else this.stats.count("deliveries");
  }

  protected onClose(_ws: WebSocket, att: PassnoteAttachment): void {
    if (!att.authed || !att.peer) return;
    for (const o of this.peers(att.peer)) this.send(o.ws, { type: "leave", peer: att.peer });
  }
}
