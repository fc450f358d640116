// `npm run check:close-linger`: does the runtime still keep a WebSocket's TCP connection open
// after the server closed it, when the client's first frame was its answering close?
// (docs/hostile.md, "The TCP connection after an auth-timeout close".) Not the relay: a Durable
// Object of a dozen lines under the same workerd binary, so a new workerd release can be checked
// in a few seconds. Each case opens one raw socket, lets the object close it with 4001 after
// 300 ms (or, in the last case, closes first itself), answers the close frame as RFC 6455 asks,
// and times the close frame and the TCP end.
// Runs under plain Node 22 (type stripping): erasable TypeScript only.
import { spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const WORKER = `
import { DurableObject } from "cloudflare:workers";
export class Obj extends DurableObject {
  constructor(ctx, env) { super(ctx, env); ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong")); }
  async fetch(req) {
    const pair = new WebSocketPair();
    if (new URL(req.url).searchParams.get("hibernate") === "no") pair[1].accept();
    else this.ctx.acceptWebSocket(pair[1]);
    if (new URL(req.url).searchParams.get("closer") !== "client") setTimeout(() => pair[1].close(4001, "timeout"), 300);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }
  webSocketClose(ws, code, reason) { try { ws.close(code, reason); } catch {} }
}
export default { fetch: (req, env) => env.OBJ.get(env.OBJ.idFromName(nameOf(req))).fetch(req) };
function nameOf(req) { return new URL(req.url).searchParams.get("n"); }
`;

const config = (port: number, dir: string) => `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .w), (name = "disk", disk = (path = "${join(dir, "data")}", writable = true)) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const w :Workerd.Worker = (
  modules = [ (name = "worker.js", esModule = embed "worker.js") ],
  compatibilityDate = "2025-09-01",
  durableObjectNamespaces = [ (className = "Obj", uniqueKey = "close-linger", enableSql = true) ],
  durableObjectStorage = (localDisk = "disk"),
  bindings = [ (name = "OBJ", durableObjectNamespace = "Obj") ],
);
`;

interface Timing {
  closeFrame: number | null;
  tcpEnd: number | null;
}

/**
 * One raw WebSocket client: optionally sends `first` after the upgrade (the string "close": a
 * close frame 300 ms after the upgrade, the client closing first), answers the server's close
 * frame, times both ends.
 */
function run(port: number, query: string, first: string | null, giveUp = 30_000): Promise<Timing> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const out: Timing = { closeFrame: null, tcpEnd: null };
    const mask = (op: number, payload: Buffer) => {
      const key = randomBytes(4);
      return Buffer.concat([Buffer.from([0x80 | op, 0x80 | payload.length]), key, Buffer.from(payload.map((b, i) => b ^ key[i % 4]))]);
    };
    const s = net.connect(port, "127.0.0.1", () => {
      s.write(
        `GET /?n=${randomUUID()}&${query} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
    });
    let buf = Buffer.alloc(0);
    let upgraded = false;
    s.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      if (!upgraded) {
        const i = buf.indexOf("\r\n\r\n");
        if (i < 0) return;
        upgraded = true;
        buf = buf.subarray(i + 4);
        if (first === "close")
          setTimeout(() => s.write(mask(8, Buffer.from([0x0f, 0xa1]))), 300); // 4001
        else if (first !== null) s.write(mask(1, Buffer.from(first)));
      }
      while (buf.length >= 2) {
        const op = buf[0] & 15;
        const len = buf[1] & 127;
        if (buf.length < 2 + len) return;
        const payload = buf.subarray(2, 2 + len);
        buf = buf.subarray(2 + len);
        if (op === 8) {
          out.closeFrame = Date.now() - t0;
          if (first !== "close") s.write(mask(8, payload.subarray(0, 2)));
        }
      }
    });
    const timer = setTimeout(() => s.destroy(), giveUp);
    s.on("close", () => {
      clearTimeout(timer);
      if (out.closeFrame !== null && Date.now() - t0 < giveUp) out.tcpEnd = Date.now() - t0;
      resolve(out);
    });
    s.on("error", () => {});
  });
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

async function listening(port: number, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const ok = await new Promise<boolean>((r) =>
      net
        .connect(port, "127.0.0.1")
        .on("connect", function (this: net.Socket) {
          this.destroy();
          r(true);
        })
        .on("error", () => r(false)),
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("workerd did not start listening");
}

const dir = mkdtempSync(join(tmpdir(), "close-linger-"));
const port = await freePort();
mkdirSync(join(dir, "data"));
writeFileSync(join(dir, "worker.js"), WORKER);
writeFileSync(join(dir, "config.capnp"), config(port, dir));
const bin = createRequire(import.meta.url).resolve("workerd/bin/workerd");
const workerd = spawn(bin, ["serve", join(dir, "config.capnp"), "--experimental"], { stdio: ["ignore", "ignore", "inherit"] });
try {
  await listening(port);
  const cases: Array<[string, string, string | null]> = [
    ["hibernatable, the client never sent a frame", "hibernate=yes", null],
    ["hibernatable, the client sent one text frame first", "hibernate=yes", "hello"],
    ["hibernatable, the client sent the auto-response ping first", "hibernate=yes", "ping"],
    ["accept() (not hibernatable), the client never sent a frame", "hibernate=no", null],
    ["hibernatable, the client closes first, never having sent a frame", "hibernate=yes&closer=client", "close"],
  ];
  const results = await Promise.all(cases.map(([, q, first]) => run(port, q, first)));
  let lingers = false;
  for (const [i, [name]] of cases.entries()) {
    const { closeFrame, tcpEnd } = results[i];
    const after = closeFrame === null || tcpEnd === null ? null : tcpEnd - closeFrame;
    if (i === 0 && (after === null || after > 1000)) lingers = true;
    const fmt = (ms: number | null) => (ms === null ? "never" : `${(ms / 1000).toFixed(2)} s`);
    console.log(
      `${name}: close frame at ${fmt(closeFrame)}, TCP end at ${fmt(tcpEnd)}${after === null ? "" : ` (${fmt(after)} after the close)`}`,
    );
  }
  console.log(
    lingers
      ? "\nThis workerd keeps a silent client's connection after the close (the two runtime faults in docs/upstream/kj-websocket-pipe-close.md)."
      : "\nThis workerd ends a silent client's connection at the close: the note in docs/hostile.md can go.",
  );
} finally {
  workerd.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
}
