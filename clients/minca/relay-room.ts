// The code-channel room on a relay (docs/minca-rooms.md) as a RoomTransport: joins with a fresh
// throwaway P-256 key per room, answers the challenge, and turns welcome/peer/gone and relayed
// messages into room events.
import { newP256Key } from "../../shared/minca/es256";
import { deliveredSchema, makeJoin } from "../../shared/minca/room";
import { EventQueue, type JoinRoom, type RoomMessage, type RoomTransport } from "./protocol/transport";
import { relayBase } from "../relay-url";
import { webSocketClass } from "../websocket";

export interface RelayRoomOptions {
  WebSocket?: typeof WebSocket;
  /** Gives up joining after this long. Default 10 s. */
  joinTimeoutMs?: number;
  /** Errors the relay sends after the welcome (too_many_messages, peer_unavailable, ...). */
  onRelayError?: (code: string, message: string) => void;
}

/** The room endpoint for a relay URL (any spelling: clients/relay-url.ts). */
export function roomUrl(relayUrl: string, room: string): string {
  return `${relayBase(relayUrl, "ws")}/minca/v1/rooms/${room}`;
}

/** Joins rooms on the relay at `relayUrl`. */
export function relayRooms(relayUrl: string, opts: RelayRoomOptions = {}): JoinRoom {
  const WS = webSocketClass(opts.WebSocket, "relayRooms(relayUrl, { WebSocket })");
  return async (room) => {
    const key = await newP256Key();
    const ws = new WS(roomUrl(relayUrl, room));
    const events = new EventQueue();
    return new Promise<RoomTransport>((resolve, reject) => {
      let welcomed = false;
      const timer = setTimeout(() => {
        reject(new Error("the relay did not welcome this peer in time"));
        ws.close();
      }, opts.joinTimeoutMs ?? 10_000);
      const transport = (peers: string[]): RoomTransport => ({
        did: key.did,
        peers,
        send(msg: RoomMessage) {
          if (ws.readyState === WS.OPEN) ws.send(JSON.stringify(msg));
        },
        listen: (l) => events.listen(l),
        close() {
          if (ws.readyState === WS.OPEN || ws.readyState === WS.CONNECTING) ws.close(1000);
        },
      });
      ws.addEventListener("message", async (ev) => {
        if (typeof ev.data !== "string") return;
        let msg: Record<string, unknown> | null;
        try {
          msg = JSON.parse(ev.data);
        } catch {
          return;
        }
        if (!welcomed) {
          if (msg?.type === "challenge" && typeof msg.challenge === "string") {
            ws.send(JSON.stringify(await makeJoin(key, room, msg.challenge)));
          } else if (msg?.type === "welcome" && Array.isArray(msg.peers)) {
            welcomed = true;
            clearTimeout(timer);
            resolve(transport(msg.peers.filter((p: unknown): p is string => typeof p === "string")));
          } else if (msg?.type === "error") {
            clearTimeout(timer);
            reject(new Error(`the relay refused the join: ${msg.code}: ${msg.message}`));
          }
          return;
        }
        if (msg?.type === "peer" && typeof msg.did === "string") return events.emit({ kind: "peer", did: msg.did });
        if (msg?.type === "gone" && typeof msg.did === "string") return events.emit({ kind: "gone", did: msg.did });
        if (msg?.type === "error") return opts.onRelayError?.(String(msg.code), String(msg.message));
        if (msg?.type === "pong") return;
        const delivered = deliveredSchema.safeParse(msg);
        if (delivered.success) {
          const { type, from, payload } = delivered.data;
          events.emit({ kind: "message", type, from, payload });
        }
      });
      ws.addEventListener("close", (ev) => {
        clearTimeout(timer);
        if (!welcomed) reject(new Error(`the relay closed the room socket (${ev.code} ${ev.reason})`));
        else events.emit({ kind: "closed", code: ev.code, reason: ev.reason });
      });
      ws.addEventListener("error", () => {
        if (!welcomed) {
          clearTimeout(timer);
          reject(new Error("could not reach the relay"));
        }
      });
    });
  };
}
