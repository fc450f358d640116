// Baseline (a) of `npm run bench`: the platform's limit. The least a Durable Object can do and
// still route the relay's traffic on the same local workerd: one object per Tally user and one
// per Passnote room, hibernatable sockets, delivery between user objects by RPC, offline storage
// in the object's SQLite. No validation, no authentication, no rate limit, no frame bound: it
// speaks just enough of both wire protocols for bench/tally.ts and bench/passnote.ts to drive it
// exactly as they drive the relay. Bench-only; never part of the production Worker.
import { DurableObject } from "cloudflare:workers";

interface Env {
  USER: DurableObjectNamespace<BareUser>;
  ROOM: DurableObjectNamespace<BareRoom>;
}

const CHALLENGE = JSON.stringify({ type: "challenge", challenge: "0".repeat(64) });

export class BareUser extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS q (seq INTEGER PRIMARY KEY, body TEXT NOT NULL)");
  }

  async fetch(): Promise<Response> {
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1]);
    pair[1].send(CHALLENGE);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const msg = JSON.parse(message as string);
    if (msg.type === "queue_peer_envelope") {
      const env = msg.envelope;
      const status = await this.env.USER.get(this.env.USER.idFromName(env.to_user_id)).deliver(JSON.stringify(env));
      ws.send(JSON.stringify({ type: "queued", id: env.id, to_user_id: env.to_user_id, status }));
    } else if (msg.type === "register") {
      ws.serializeAttachment(true);
      const rows = this.ctx.storage.sql.exec<{ seq: number; body: string }>("SELECT seq, body FROM q ORDER BY seq").toArray();
      ws.send(JSON.stringify({ type: "registered", user_id: msg.user_id, device_id: "0".repeat(16), queued: rows.length }));
      for (const r of rows) ws.send(r.body);
      ws.send('{"type":"queue_drained"}');
      if (rows.length) this.ctx.storage.sql.exec("DELETE FROM q WHERE seq <= ?", rows[rows.length - 1].seq);
    }
  }

  /** RPC: an envelope for this user; to every registered socket, else stored. */
  async deliver(raw: string): Promise<string> {
    let n = 0;
    for (const ws of this.ctx.getWebSockets()) {
      if (ws.deserializeAttachment() !== true) continue;
      ws.send(raw);
      n++;
    }
    if (n > 0) return "delivered";
    this.ctx.storage.sql.exec("INSERT INTO q (body) VALUES (?)", raw);
    return "stored";
  }

  webSocketClose(ws: WebSocket, code: number): void {
    ws.close(code === 1005 || code === 1006 ? 1000 : code);
  }
}

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const BROADCAST = "0000000000000000";

/** A Passnote room: each socket is tagged with its peer id at accept, so routing reads no attachment. */
export class BareRoom extends DurableObject<Env> {
  async fetch(): Promise<Response> {
    const pair = new WebSocketPair();
    const peer = hex(crypto.getRandomValues(new Uint8Array(8)));
    this.ctx.acceptWebSocket(pair[1], [peer]);
    pair[1].send(JSON.stringify({ type: "challenge", challenge: "AA" }));
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const self = this.ctx.getTags(ws)[0];
    if (typeof message === "string") {
      // join: welcome this socket, tell the others.
      const others = this.ctx.getWebSockets().filter((o) => o !== ws && o.deserializeAttachment() === true);
      ws.serializeAttachment(true);
      ws.send(JSON.stringify({ type: "welcome", peer: self, peers: others.map((o) => this.ctx.getTags(o)[0]) }));
      for (const o of others) o.send(JSON.stringify({ type: "join", peer: self }));
      return;
    }
    const data = new Uint8Array(message);
    const to = hex(data.subarray(0, 8));
    data.set(hexBytes(self), 0);
    const targets = to === BROADCAST ? this.ctx.getWebSockets().filter((o) => o !== ws) : this.ctx.getWebSockets(to);
    for (const o of targets) o.send(data);
  }

  webSocketClose(ws: WebSocket, code: number): void {
    ws.close(code === 1005 || code === 1006 ? 1000 : code);
  }
}

function hexBytes(h: string): Uint8Array {
  const out = new Uint8Array(h.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(h.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    const [, proto, , key] = url.pathname.split("/");
    if (url.pathname === "/healthz") return new Response("ok");
    if (proto === "tally") return env.USER.get(env.USER.idFromName(key)).fetch(request);
    if (proto === "passnote") return env.ROOM.get(env.ROOM.idFromName(key)).fetch(request);
    return new Response("not found", { status: 404 });
  },
};
