// Baseline (b) of `npm run bench`: what a user might run instead of the relay: one Node process on
// the `ws` package doing the same routing job, everything in memory. Tally: sockets by user,
// envelopes routed by to_user_id, stored in a Map while the user is offline and flushed on
// register; a ping is answered with a pong, as the relay's runtime does. Passnote: rooms of peers, binary frames routed by their 8-byte peer id. Like baseline
// (a) it checks nothing (no validation, no signatures, no limits) and keeps nothing on disk.
//
//   node bench/baselines/node-ws-relay.ts PORT      (erasable TypeScript: Node 22 runs it as is)
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { WebSocketServer, type WebSocket } from "ws";

const port = Number(process.argv[2] ?? 8790);
const BROADCAST = Buffer.alloc(8);

const users = new Map<string, Set<WebSocket>>();
const stored = new Map<string, string[]>();
const rooms = new Map<string, Map<string, WebSocket>>();

const server = createServer((req, res) => {
  res.writeHead(req.url === "/healthz" ? 200 : 404).end(req.url === "/healthz" ? "ok" : "not found");
});
const wss = new WebSocketServer({ server });

wss.on("connection", (ws, req) => {
  const [, proto, , key] = (req.url ?? "").split("/");
  if (proto === "tally") tally(ws, key);
  else if (proto === "passnote") passnote(ws, key);
  else ws.close(1008);
});

function tally(ws: WebSocket, user: string): void {
  ws.send(JSON.stringify({ type: "challenge", challenge: "0".repeat(64) }));
  ws.on("message", (data) => {
    const msg = JSON.parse(String(data));
    if (msg.type === "ping") ws.send('{"type":"pong"}');
    else if (msg.type === "queue_peer_envelope") {
      const env = msg.envelope;
      const raw = JSON.stringify(env);
      const devices = users.get(env.to_user_id);
      let status = "stored";
      if (devices?.size) {
        for (const d of devices) d.send(raw);
        status = "delivered";
      } else {
        const q = stored.get(env.to_user_id) ?? [];
        q.push(raw);
        stored.set(env.to_user_id, q);
      }
      ws.send(JSON.stringify({ type: "queued", id: env.id, to_user_id: env.to_user_id, status }));
    } else if (msg.type === "register") {
      const q = stored.get(user) ?? [];
      stored.delete(user);
      ws.send(JSON.stringify({ type: "registered", user_id: user, device_id: "0".repeat(16), queued: q.length }));
      for (const body of q) ws.send(body);
      ws.send('{"type":"queue_drained"}');
      let set = users.get(user);
      if (!set) {
        set = new Set();
        users.set(user, set);
      }
      set.add(ws);
    }
  });
  ws.on("close", () => {
    const set = users.get(user);
    set?.delete(ws);
    if (set?.size === 0) users.delete(user);
  });
}

function passnote(ws: WebSocket, roomId: string): void {
  const peer = randomBytes(8).toString("hex");
  const peerBytes = Buffer.from(peer, "hex");
  ws.send(JSON.stringify({ type: "challenge", challenge: "AA" }));
  let room = rooms.get(roomId);
  if (!room) {
    room = new Map();
    rooms.set(roomId, room);
  }
  const members = room;
  ws.on("message", (data, isBinary) => {
    if (!isBinary) {
      const others = [...members.keys()];
      members.set(peer, ws);
      ws.send(JSON.stringify({ type: "welcome", peer, peers: others }));
      for (const o of others) members.get(o)!.send(JSON.stringify({ type: "join", peer }));
      return;
    }
    const buf = data as Buffer;
    const to = buf.subarray(0, 8);
    const out = Buffer.concat([peerBytes, buf.subarray(8)]);
    if (to.equals(BROADCAST)) {
      for (const [id, o] of members) if (id !== peer) o.send(out);
    } else members.get(to.toString("hex"))?.send(out);
  });
  ws.on("close", () => {
    members.delete(peer);
    for (const o of members.values()) o.send(JSON.stringify({ type: "leave", peer }));
    if (members.size === 0) rooms.delete(roomId);
  });
}

server.listen(port, "127.0.0.1", () => console.log(`node-ws relay on 127.0.0.1:${port}`));
process.on("SIGTERM", () => process.exit(0));
