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
  MAILBOX: DurableObjectNamespace<BareMailbox>;
  SPACE: DurableObjectNamespace<BareSpace>;
}

const CHALLENGE = JSON.stringify({ type: "challenge", challenge: "0".repeat(64) });

/**
 * What (a) used, counted as the relay counts its own (durable-objects/base/object-usage.ts) and
 * read by the bench at GET /usage: object entries (fetch, RPC), socket messages, SQLite rows read
 * and written (each query's cursor), Worker requests. Local workerd runs the Worker and every
 * object of this service in one isolate, so one module-level tally sees them all; counting adds
 * no request and no row. Bench-only.
 */
const USAGE = { doRequests: 0, socketMessages: 0, rowsRead: 0, rowsWritten: 0, workerRequests: 0 };

/** Counts the rows of every query on `sql` (each cursor is read to its end at once; (a)'s queries all are). */
function countRows(sql: SqlStorage): void {
  const exec = sql.exec.bind(sql);
  Object.defineProperty(sql, "exec", {
    configurable: true,
    value: (query: string, ...bindings: unknown[]) => {
      const cursor = exec(query, ...bindings);
      const rows = cursor.toArray();
      USAGE.rowsRead += cursor.rowsRead;
      USAGE.rowsWritten += cursor.rowsWritten;
      return {
        toArray: () => rows,
        one: () => {
          if (rows.length !== 1) throw new Error(`expected one row, got ${rows.length}`);
          return rows[0];
        },
        [Symbol.iterator]: () => rows[Symbol.iterator](),
      };
    },
  });
}

export class BareUser extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    countRows(ctx.storage.sql);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS q (seq INTEGER PRIMARY KEY, body TEXT NOT NULL)");
    // Pings answered by the runtime without waking the object, as the relay's are: the floor an idle device costs.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair('{"type":"ping"}', '{"type":"pong"}'));
  }

  async fetch(): Promise<Response> {
    USAGE.doRequests++;
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1]);
    pair[1].send(CHALLENGE);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    USAGE.socketMessages++;
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
    USAGE.doRequests++;
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
    USAGE.doRequests++;
    const pair = new WebSocketPair();
    const peer = hex(crypto.getRandomValues(new Uint8Array(8)));
    this.ctx.acceptWebSocket(pair[1], [peer]);
    pair[1].send(JSON.stringify({ type: "challenge", challenge: "AA" }));
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    USAGE.socketMessages++;
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

const b64url = (b: Uint8Array) =>
  btoa(String.fromCharCode(...b))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
const json = (body: string, status = 200) => new Response(body, { status, headers: { "content-type": "application/json" } });

/** A Minca mailbox topic: items in SQLite, a GET with ?wait= parked until a POST arrives. */
export class BareMailbox extends DurableObject<Env> {
  private waiters: Array<() => void> = [];

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    countRows(ctx.storage.sql);
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS items (seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, until INTEGER NOT NULL, blob BLOB NOT NULL)",
    );
  }

  async fetch(request: Request): Promise<Response> {
    USAGE.doRequests++;
    const url = new URL(request.url);
    const sql = this.ctx.storage.sql;
    if (request.method === "POST") {
      const blob = await request.arrayBuffer();
      const at = Math.floor(Date.now() / 1000);
      const until = at + 30 * 86_400;
      const seq = sql
        .exec<{ seq: number }>("INSERT INTO items (at, until, blob) VALUES (?, ?, ?) RETURNING seq", at, until, blob)
        .one().seq;
      for (const wake of this.waiters.splice(0)) wake();
      return json(JSON.stringify({ seq, until }), 201);
    }
    const after = Number(url.searchParams.get("after") ?? 0);
    const deadline = Date.now() + Number(url.searchParams.get("wait") ?? 0) * 1000;
    for (;;) {
      const rows = sql
        .exec<{ seq: number; at: number; until: number; blob: ArrayBuffer }>(
          "SELECT seq, at, until, blob FROM items WHERE seq > ? ORDER BY seq LIMIT 100",
          after,
        )
        .toArray();
      const left = deadline - Date.now();
      if (rows.length > 0 || left <= 0) {
        const items = rows.map((r) => ({ seq: r.seq, at: r.at, until: r.until, blob: b64url(new Uint8Array(r.blob)) }));
        return json(
          JSON.stringify({ items, next: rows.length ? rows[rows.length - 1].seq : after, more: false, oldest_seq: rows[0]?.seq ?? null }),
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}

/** A Minca space's version log: each version's JSON text appended as given, pages read back as text. */
export class BareSpace extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    countRows(ctx.storage.sql);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS log (seq INTEGER PRIMARY KEY, version TEXT NOT NULL)");
  }

  async fetch(request: Request): Promise<Response> {
    USAGE.doRequests++;
    const sql = this.ctx.storage.sql;
    if (request.method === "POST") {
      const versions = (await request.json()) as Array<{ id: string }>;
      const results = this.ctx.storage.transactionSync(() =>
        versions.map((v) => ({
          id: v.id,
          accepted: true,
          seq: sql.exec<{ seq: number }>("INSERT INTO log (version) VALUES (?) RETURNING seq", JSON.stringify(v)).one().seq,
        })),
      );
      return json(JSON.stringify({ results }));
    }
    const url = new URL(request.url);
    const after = Number(url.searchParams.get("after") ?? 0);
    const limit = Number(url.searchParams.get("limit") ?? 100);
    const rows = sql
      .exec<{ seq: number; version: string }>("SELECT seq, version FROM log WHERE seq > ? ORDER BY seq LIMIT ?", after, limit + 1)
      .toArray();
    const more = rows.length > limit;
    const page = rows.slice(0, limit);
    const items = page.map((r) => `{"seq":${r.seq},"version":${r.version}}`).join(",");
    return json(`{"items":[${items}],"next":${page.length ? page[page.length - 1].seq : after},"more":${more}}`);
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    const [, proto, , key, key2] = url.pathname.split("/");
    if (url.pathname === "/healthz") return new Response("ok");
    if (url.pathname === "/usage") return json(JSON.stringify(USAGE));
    USAGE.workerRequests++;
    if (proto === "tally") return env.USER.get(env.USER.idFromName(key)).fetch(request);
    if (proto === "passnote") return env.ROOM.get(env.ROOM.idFromName(key)).fetch(request);
    // /minca/v1/mailbox/:topic and /minca/v1/spaces/:id/versions
    if (proto === "minca" && key === "mailbox") return env.MAILBOX.get(env.MAILBOX.idFromName(key2)).fetch(request);
    if (proto === "minca" && key === "spaces") return env.SPACE.get(env.SPACE.idFromName(key2)).fetch(request);
    return new Response("not found", { status: 404 });
  },
};
