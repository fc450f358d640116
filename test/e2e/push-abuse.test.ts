// Web Push against hostile push services (docs/mailbox.md): push services on loopback that
// redirect, that answer an error with an endless body, and a relay that was not told to allow
// loopback. Each is a real HTTP server the running relay pushes to.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { afterAll, describe, expect, inject, it } from "vitest";
import { nodeSubscription } from "../helpers/webpush-node";
import { type RelayProcess, startRelay } from "../helpers/relay-process";
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

// One relay started as `npm start` starts it by default (outbound: public networks only) whose
// PUSH_ENDPOINT_ALLOW names only `localhost`, for the two describes below.
let own: RelayProcess | undefined;
const ownRelay = async () => (own ??= await startRelay({ env: { PUSH_ENDPOINT_ALLOW: "http://localhost" }, outbound: "public" }));
afterAll(async () => {
  await own?.stop();
});

describe("docs/mailbox.md: loopback push services pass only by PUSH_ENDPOINT_ALLOW", () => {
  it("a relay whose setting does not name the tests' loopback push service refuses it (400 invalid_endpoint); the suite's relay, with it, accepts it", async () => {
    const relay = await ownRelay();
    const topic = newTopic();
    const res = await register(`${relay.url}/minca/v1/mailbox`, topic, "http://127.0.0.1:9/push/x");
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error.code).toBe("invalid_endpoint");
    expect((await register(base, topic, "http://127.0.0.1:9/push/x")).status).toBe(201);
  });
});

describe("docs/hostile.md: a public name that resolves to loopback is stopped by the runtime's outbound filter", () => {
  it("under npm start's default outbound (public), a push to a name resolving to 127.0.0.1 never reaches the loopback service; the same service is reachable when loopback is allowed", async () => {
    // A loopback push service on both loopback addresses (a name may resolve to either).
    let requests = 0;
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      requests++;
      req.resume();
      res.writeHead(201).end();
    };
    const v4 = createServer(handler);
    await new Promise<void>((resolve) => v4.listen(0, "127.0.0.1", resolve));
    const port = (v4.address() as { port: number }).port;
    const v6 = createServer(handler);
    await new Promise<void>((resolve) => v6.listen(port, "::1", resolve).on("error", () => resolve()));
    try {
      // `localhost` stands in for a public wildcard name such as 127.0.0.1.nip.io (this machine has
      // no DNS): the endpoint rule passes it only because the setting names it, as it passes
      // 127.0.0.1.nip.io because that is a public name; what stops either is where the runtime may
      // connect, judged on the address the name resolves to.
      const relay = await ownRelay();
      const topic = newTopic();
      expect((await register(`${relay.url}/minca/v1/mailbox`, topic, `http://localhost:${port}/push/nip`)).status).toBe(201);
      expect((await fetch(`${relay.url}/minca/v1/mailbox/${topic}`, { method: "POST", body: "wake" })).status).toBe(201);
      await waitFor(() => new RegExp(`a push to http://localhost:${port} got no answer`).test(relay.output()), {
        what: "the relay's try, refused by the runtime",
        timeout: 20_000,
      });
      expect(relay.output()).toMatch(new RegExp(`connecting to localhost:${port} is not allowed`));
      expect(requests).toBe(0);
      // The control: the suite's relay (outbound public and local) reaches the same service.
      const control = newTopic();
      expect((await register(base, control, `http://127.0.0.1:${port}/push/control`)).status).toBe(201);
      expect((await fetch(`${base}/${control}`, { method: "POST", body: "wake" })).status).toBe(201);
      await waitFor(() => requests === 1, { what: "the control push" });
    } finally {
      v4.closeAllConnections();
      v6.closeAllConnections();
      await Promise.all([new Promise((r) => v4.close(r)), new Promise((r) => v6.close(r))]);
    }
  });
});
