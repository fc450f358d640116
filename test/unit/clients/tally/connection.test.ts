// The client's relay connection (clients/tally/connection.ts): pings and a missed pong, the
// reconnect backoff with jitter, and which closes end the retries. The half-open relay here is a
// real WebSocket server that registers the client and then never answers a ping.
import { afterEach, describe, expect, it, vi } from "vitest";
import { WebSocketServer, type WebSocket as WsSocket } from "ws";
import { TallyClient, CLIENT_LIMITS } from "../../../../clients/tally/index";
import { isFatalClose, reconnectDelay } from "../../../../clients/tally/connection";
import { CLOSE_CODES } from "../../../../shared/limits";
import { newUser } from "../../../helpers/tally";
import { freePort } from "../../../helpers/relay-process";
import { waitFor } from "../../../helpers/wait";

const servers: WebSocketServer[] = [];
const clients: TallyClient[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
  for (const s of servers.splice(0)) s.close();
});

/**
 * A relay that registers anyone (challenge, registered, queue_drained) and hands every other
 * frame, with its connection's number, to `onFrame`.
 */
async function fakeRelay(onFrame: (ws: WsSocket, msg: { type: string }, n: number) => void = () => {}) {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  servers.push(wss);
  await new Promise<void>((r) => wss.on("listening", () => r()));
  const connections: WsSocket[] = [];
  wss.on("connection", (ws) => {
    const n = connections.push(ws) - 1;
    ws.send(JSON.stringify({ type: "challenge", challenge: "ab".repeat(32) }));
    ws.on("message", (data) => {
      const msg = JSON.parse(String(data));
      if (msg.type !== "register") return onFrame(ws, msg, n);
      ws.send(JSON.stringify({ type: "registered", user_id: msg.user_id, device_id: "0123456789abcdef", queued: 0 }));
      ws.send(JSON.stringify({ type: "queue_drained" }));
    });
  });
  const { port } = wss.address() as { port: number };
  return { url: `ws://127.0.0.1:${port}`, connections };
}

/** A relay that registers anyone and answers nothing after that (a half-open connection, as far as pings go). */
async function silentRelay(): Promise<{ url: string; connections: WsSocket[]; pings: number[] }> {
  const pings: number[] = [];
  const relay = await fakeRelay((_ws, msg, n) => {
    if (msg.type === "ping") pings[n] = (pings[n] ?? 0) + 1;
  });
  return { ...relay, pings };
}

describe("the relay connection", () => {
  it("the SDK pings on an interval and reconnects on a missed pong", async () => {
    const relay = await silentRelay();
    const closes: number[] = [];
    const c = new TallyClient({
      relayUrl: relay.url,
      secretKey: newUser().secretKey,
      store: "memory",
      pingIntervalMs: 50,
      pongTimeoutMs: 100,
    });
    clients.push(c);
    c.on("close", (code) => void closes.push(code));
    await c.connect();
    await waitFor(() => relay.connections.length >= 2, { what: "a second connection after the missed pong" });
    expect(relay.pings[0]).toBeGreaterThanOrEqual(1);
    expect(closes[0]).toBe(4000);
  });

  it("jitter on every reconnect backoff: delays spread over the upper half of an exponential, capped", () => {
    expect(reconnectDelay(0, () => 0)).toBe(CLIENT_LIMITS.reconnect_first_ms / 2);
    expect(reconnectDelay(0, () => 1)).toBe(CLIENT_LIMITS.reconnect_first_ms);
    expect(reconnectDelay(3, () => 0.5)).toBe(Math.round(CLIENT_LIMITS.reconnect_first_ms * 8 * 0.75));
    expect(reconnectDelay(30, () => 1)).toBe(CLIENT_LIMITS.reconnect_max_ms);
    const spread = new Set(Array.from({ length: 50 }, () => reconnectDelay(4)));
    expect(spread.size).toBeGreaterThan(10); // two clients rarely come back at the same moment
  });

  it("close 1008 too_many_devices is retried; only 4001 authentication refused ends the retries", () => {
    expect(isFatalClose(CLOSE_CODES.policy)).toBe(false);
    expect(isFatalClose(CLOSE_CODES.going_away)).toBe(false);
    expect(isFatalClose(CLOSE_CODES.idle_timeout)).toBe(false);
    expect(isFatalClose(CLOSE_CODES.auth_failed)).toBe(true);
  });

  it("rate_limited with retry_after_ms is honoured: after the answer the client sends nothing more until the wait has passed", async () => {
    const WAIT = 400;
    let limitedAt = 0;
    const after: number[] = []; // arrival times of envelopes after the rate_limited answer
    const relay = await fakeRelay((ws, msg) => {
      if (msg.type === "queue_peer_envelope" && limitedAt === 0) {
        limitedAt = Date.now();
        ws.send(JSON.stringify({ type: "error", code: "rate_limited", message: "too many messages; slow down", retry_after_ms: WAIT }));
      } else if (limitedAt > 0 && msg.type === "queue_peer_envelope") after.push(Date.now()); // the held sends (a ping the client sent before the answer reached it is not one)
    });
    const c = new TallyClient({ relayUrl: relay.url, secretKey: newUser().secretKey, store: "memory" });
    clients.push(c);
    let answered = false; // the client has the answer (the relay's sending it is not enough: it may still be on its way)
    c.on("relay_error", (code) => {
      if (code === "rate_limited") answered = true;
    });
    await c.connect();
    await c.send(newUser().npub, "note", { n: 0 });
    await waitFor(() => answered, { what: "the rate_limited answer" });
    // The app keeps sending right away; the frames wait for the relay's hint.
    for (let i = 1; i <= 3; i++) await c.send(newUser().npub, "note", { n: i });
    await waitFor(() => after.length >= 3, { what: "the held frames" });
    expect(Math.min(...after) - limitedAt).toBeGreaterThanOrEqual(WAIT - 20);
  });

  it("connect() to a closed port rejects at once with Node's own WebSocket, with reconnect on or off", async () => {
    expect(typeof globalThis.WebSocket).toBe("function"); // Node 22's built-in one, no `ws`
    const port = await freePort();
    for (const reconnect of [false, true]) {
      const c = new TallyClient({ relayUrl: `ws://127.0.0.1:${port}`, secretKey: newUser().secretKey, store: "memory", reconnect });
      clients.push(c);
      const t0 = Date.now();
      const outcome = await Promise.race([
        c.connect().then(
          () => "registered",
          (e: Error) => `rejected: ${e.message}`,
        ),
        new Promise((r) => setTimeout(() => r("still pending"), CLIENT_LIMITS.connect_timeout_ms)),
      ]);
      expect(outcome).toMatch(/^rejected/);
      expect(Date.now() - t0).toBeLessThan(CLIENT_LIMITS.connect_timeout_ms);
    }
  });

  it("connect() rejects within connect_timeout_ms when the relay accepts the connection and never answers", async () => {
    const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" }); // never sends the challenge
    servers.push(wss);
    await new Promise<void>((r) => wss.on("listening", () => r()));
    const { port } = wss.address() as { port: number };
    const c = new TallyClient({
      relayUrl: `ws://127.0.0.1:${port}`,
      secretKey: newUser().secretKey,
      store: "memory",
      reconnect: false,
      connectTimeoutMs: 300,
    });
    clients.push(c);
    const t0 = Date.now();
    await expect(c.connect()).rejects.toThrow(/no registration in time/);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
  });

  it("with no WebSocket on the platform (Node 20), connect() rejects saying to pass the one from `ws`", async () => {
    vi.stubGlobal("WebSocket", undefined);
    try {
      const c = new TallyClient({ relayUrl: "ws://127.0.0.1:1", secretKey: newUser().secretKey, store: "memory" });
      await expect(c.connect()).rejects.toThrow(/WebSocket.*`ws`/);
    } finally {
      vi.unstubAllGlobals();
    }
  });
});
