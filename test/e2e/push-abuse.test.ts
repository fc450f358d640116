// Web Push against hostile push services (docs/mailbox.md): push services on loopback that
// redirect, that answer an error with an endless body, and a relay that was not told to allow
// loopback. Each is a real HTTP server the running relay pushes to.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { afterAll, describe, expect, inject, it } from "vitest";
import { nodeSubscription } from "../helpers/webpush-node";
import { startRelay } from "../helpers/relay-process";
import { waitFor } from "../helpers/wait";

const relay = inject("relayUrl");
const base = `${relay}/minca/v1/mailbox`;
let n = 0;
const newTopic = () => `e2e_push_${Date.now().toString(36)}_${(++n).toString(36)}_${Math.random().toString(36).slice(2, 8)}`;

interface Hostile {
  origin: string;
  requests: number;
  closed: number;
  server: Server;
}

async function serve(handler: (req: IncomingMessage, res: ServerResponse, self: Hostile) => void): Promise<Hostile> {
  const self: Hostile = { origin: "", requests: 0, closed: 0, server: undefined as never };
  self.server = createServer((req, res) => {
    self.requests++;
    res.on("close", () => self.closed++);
    req.resume();
    req.on("end", () => handler(req, res, self));
  });
  await new Promise<void>((resolve) => self.server.listen(0, "127.0.0.1", resolve));
  const addr = self.server.address();
  self.origin = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
  return self;
}

async function stop(h: Hostile | undefined): Promise<void> {
  if (!h) return;
  h.server.closeAllConnections();
  await new Promise<void>((resolve) => h.server.close(() => resolve()));
}

async function register(mailboxBase: string, topic: string, endpoint: string): Promise<Response> {
  const sub = nodeSubscription(endpoint);
  return fetch(`${mailboxBase}/${topic}/receivers`, { method: "POST", body: JSON.stringify({ endpoint, keys: sub.keys }) });
}

describe("docs/mailbox.md: sending to a push service never follows it further than one answer", () => {
  const servers: Hostile[] = [];
  afterAll(async () => {
    for (const s of servers) await stop(s);
  });

  it("a redirecting push service: the relay does not follow the redirect (the target never hears of it) and does not retry", async () => {
    const target = await serve((_req, res) => res.writeHead(201).end());
    const redirecting = await serve((_req, res) => res.writeHead(307, { location: `${target.origin}/push/elsewhere` }).end());
    servers.push(target, redirecting);
    const topic = newTopic();
    expect((await register(base, topic, `${redirecting.origin}/push/r1`)).status).toBe(201);
    expect((await fetch(`${base}/${topic}`, { method: "POST", body: "wake" })).status).toBe(201);
    await waitFor(() => redirecting.requests === 1 && redirecting.closed === 1, { what: "the push to the redirecting service" });
    // A second item: one more push, and still nothing at the redirect's target.
    expect((await fetch(`${base}/${topic}`, { method: "POST", body: "wake" })).status).toBe(201);
    await waitFor(() => redirecting.requests === 2, { what: "the second push" });
    expect(target.requests).toBe(0);
  });

  it("an endless error answer: the relay reads at most max_answer_bytes, closes the connection and stays up", async () => {
    let written = 0;
    const endless = await serve((_req, res, self) => {
      res.writeHead(400, { "content-type": "text/plain" });
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) written += chunk.length;
        if (!res.destroyed) res.once("drain", pump);
      };
      res.on("close", () => void self);
      pump();
    });
    servers.push(endless);
    const topic = newTopic();
    expect((await register(base, topic, `${endless.origin}/push/e1`)).status).toBe(201);
    expect((await fetch(`${base}/${topic}`, { method: "POST", body: "wake" })).status).toBe(201);
    // The relay cancels the body: the push service sees its connection closed while it still writes.
    await waitFor(() => endless.requests === 1 && endless.closed === 1, { what: "the relay closing the endless answer", timeout: 20_000 });
    expect(written).toBeLessThan(64 * 1024 * 1024);
    expect((await fetch(`${relay}/healthz`)).status).toBe(200);
    // A 400 is a configuration error: not retried, and the receiver is kept.
    expect((await fetch(`${base}/${topic}`, { method: "POST", body: "again" })).status).toBe(201);
    await waitFor(() => endless.requests === 2 && endless.closed === 2, { what: "the second push", timeout: 20_000 });
  });
});

describe("docs/mailbox.md: loopback push services pass only by PUSH_ENDPOINT_ALLOW", () => {
  it("a relay started without the setting refuses the tests' loopback push service (400 invalid_endpoint); the suite's relay, with it, accepts it", async () => {
    const own = await startRelay({ env: { PUSH_ENDPOINT_ALLOW: "" } });
    try {
      const topic = newTopic();
      const res = await register(`${own.url}/minca/v1/mailbox`, topic, "http://127.0.0.1:9/push/x");
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error.code).toBe("invalid_endpoint");
      expect((await register(base, topic, "http://127.0.0.1:9/push/x")).status).toBe(201);
    } finally {
      await own.stop();
    }
  });
});
