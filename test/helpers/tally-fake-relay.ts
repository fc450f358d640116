// A stand-in relay for client tests that need a relay's answers the real one never gives on
// demand (a `not_stored` for one relay of two, say): a real WebSocket server that registers
// anyone (challenge, registered, queue_drained) and hands every later frame to `onFrame`.
import { WebSocketServer, type WebSocket as WsSocket } from "ws";

export interface FakeRelay {
  url: string;
  /** Every frame after register, in order. */
  frames: Array<{ type: string; [k: string]: unknown }>;
  connections: WsSocket[];
  close(): Promise<void>;
}

export async function fakeRelay(
  onFrame: (ws: WsSocket, msg: { type: string; [k: string]: unknown }) => void = () => {},
  deviceId = "0123456789abcdef",
): Promise<FakeRelay> {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await new Promise<void>((r) => wss.on("listening", () => r()));
  const frames: FakeRelay["frames"] = [];
  const connections: WsSocket[] = [];
  wss.on("connection", (ws) => {
    connections.push(ws);
    ws.send(JSON.stringify({ type: "challenge", challenge: "ab".repeat(32) }));
    ws.on("message", (data) => {
      const msg = JSON.parse(String(data));
      if (msg.type !== "register") {
        frames.push(msg);
        return onFrame(ws, msg);
      }
      ws.send(JSON.stringify({ type: "registered", user_id: msg.user_id, device_id: deviceId, queued: 0 }));
      ws.send(JSON.stringify({ type: "queue_drained" }));
    });
  });
  const { port } = wss.address() as { port: number };
  return {
    url: `ws://127.0.0.1:${port}`,
    frames,
    connections,
    close: () =>
      new Promise<void>((r) => {
        for (const c of connections) c.terminate();
        wss.close(() => r());
      }),
  };
}

/** The ids of the envelopes a relay was asked to queue. */
export function queuedIds(relay: FakeRelay): string[] {
  return relay.frames.filter((f) => f.type === "queue_peer_envelope").map((f) => (f.envelope as { id: string }).id);
}
