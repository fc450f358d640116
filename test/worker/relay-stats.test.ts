// The operator's counters inside workerd: reports aggregate into counts only, objects' counts
// reach the stats object in batches, and the status routes honour the admin token.
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8Encode } from "../../shared/encoding";
import { describe, expect, it } from "vitest";
import { app } from "../../workers/app";
import { relayStats } from "../../durable-objects/relay/relay-stats";
import { STATS_LIMITS } from "../../shared/limits";
import { minuteOf, type StatsSnapshot } from "../../server/stats";
import { makeAuthEvent } from "../../shared/tally/auth";
import { newUser, opaqueEnvelope } from "../helpers/tally";
import { TestSocket } from "../helpers/socket";
import { waitFor } from "../helpers/wait";
import { ownAddress } from "../helpers/client-address";

const reporter = (n: number) => n.toString(16).padStart(32, "0");
const snapshot = () => relayStats(env).snapshot() as Promise<StatsSnapshot>;

describe("the stats object", () => {
  it("sums the objects' current values by protocol; an object that reports zeros drops out", async () => {
    const stats = relayStats(env);
    const before = await snapshot();
    await stats.report({ reporter: reporter(1), protocol: "tally", gauges: { connections: 2, envelopes_stored: 5 }, counts: [] });
    await stats.report({ reporter: reporter(2), protocol: "passnote", gauges: { connections: 3, rooms_open: 1 }, counts: [] });
    await stats.report({ reporter: reporter(1), protocol: "tally", gauges: { connections: 1, envelopes_stored: 4 }, counts: [] });
    let s = await snapshot();
    expect(s.connections.tally - before.connections.tally).toBe(1);
    expect(s.connections.passnote - before.connections.passnote).toBe(3);
    expect(s.envelopes_stored - before.envelopes_stored).toBe(4);
    expect(s.rooms_open.passnote - before.rooms_open.passnote).toBe(1);
    await stats.report({ reporter: reporter(1), protocol: "tally", gauges: { connections: 0 }, counts: [] });
    await stats.report({ reporter: reporter(2), protocol: "passnote", gauges: {}, counts: [] });
    s = await snapshot();
    expect([s.connections.tally, s.connections.passnote, s.envelopes_stored]).toEqual([
      before.connections.tally,
      before.connections.passnote,
      before.envelopes_stored,
    ]);
  });

  it("adds per-minute counts into an hour of minutes, oldest first, and forgets older minutes", async () => {
    const stats = relayStats(env);
    const now = minuteOf(Date.now());
    const before = await snapshot();
    await stats.report({
      reporter: reporter(3),
      protocol: "minca",
      gauges: {},
      counts: [
        { minute: now, metric: "deliveries", n: 7 },
        { minute: now - 5, metric: "errors", n: 2 },
        { minute: now - STATS_LIMITS.window_minutes, metric: "deliveries", n: 100 },
      ],
    });
    await stats.report({ reporter: reporter(3), protocol: "minca", gauges: {}, counts: [{ minute: now, metric: "deliveries", n: 1 }] });
    const s = await snapshot();
    const last = STATS_LIMITS.window_minutes - 1;
    expect(s.per_minute.deliveries.total).toHaveLength(STATS_LIMITS.window_minutes);
    expect(s.per_minute.deliveries.by_protocol.minca[last] - before.per_minute.deliveries.by_protocol.minca[last]).toBe(8);
    expect(s.per_minute.errors.total[last - 5] - before.per_minute.errors.total[last - 5]).toBe(2);
    expect(s.per_minute.deliveries.total.reduce((a, b) => a + b) - before.per_minute.deliveries.total.reduce((a, b) => a + b)).toBe(8);
  });

  it("reports that arrive together count as if one after the other: each reporter's last values count, counts add up", async () => {
    const stats = relayStats(env);
    const now = minuteOf(Date.now());
    const before = await snapshot();
    const answers = await Promise.all([
      stats.report({
        reporter: reporter(5),
        protocol: "tally",
        gauges: { connections: 4 },
        counts: [{ minute: now, metric: "messages", n: 3 }],
      }),
      stats.report({
        reporter: reporter(6),
        protocol: "tally",
        gauges: { connections: 2 },
        counts: [{ minute: now, metric: "messages", n: 2 }],
      }),
      stats.report({
        reporter: reporter(5),
        protocol: "tally",
        gauges: { connections: 1 },
        counts: [{ minute: now, metric: "messages", n: 1 }],
      }),
      stats.report({ reporter: reporter(7), protocol: "tally", gauges: {}, counts: [], extra: 1 }),
    ]);
    expect(answers).toEqual([true, true, true, false]);
    const s = await snapshot();
    const last = STATS_LIMITS.window_minutes - 1;
    expect(s.connections.tally - before.connections.tally).toBe(3);
    expect(s.per_minute.messages.by_protocol.tally[last] - before.per_minute.messages.by_protocol.tally[last]).toBe(6);
    await Promise.all([
      stats.report({ reporter: reporter(5), protocol: "tally", gauges: {}, counts: [] }),
      stats.report({ reporter: reporter(6), protocol: "tally", gauges: { connections: 0 }, counts: [] }),
    ]);
    expect((await snapshot()).connections.tally).toBe(before.connections.tally);
  });

  it("refuses a report that carries anything but counts", async () => {
    expect(await relayStats(env).report({ reporter: "npub1notanopaquekey", protocol: "tally", gauges: {}, counts: [] })).toBe(false);
    expect(await relayStats(env).report({ reporter: reporter(4), protocol: "tally", gauges: {}, counts: [], topic: "x" })).toBe(false);
  });

  it("a Tally object's connection, messages and deliveries reach it within the flush interval", async () => {
    const before = await snapshot();
    const alice = newUser();
    const bob = newUser();
    const sockets: TestSocket[] = [];
    for (const u of [alice, bob]) {
      const res = await SELF.fetch(`http://relay.test/tally/v1/${u.npub}`, { headers: { Upgrade: "websocket" } });
      const s = new TestSocket(res.webSocket! as unknown as WebSocket);
      res.webSocket!.accept();
      const { challenge } = await s.next("challenge");
      s.send({
        type: "register",
        user_id: u.npub,
        auth: makeAuthEvent({ secretKey: u.secretKey, challenge, relayUrl: "ws://relay.test" }),
      });
      await s.next("queue_drained");
      sockets.push(s);
    }
    const started = Date.now();
    sockets[0].send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "counted") });
    expect((await sockets[0].next("queued")).status).toBe("stored"); // delivered; "stored" to a stranger
    const tot = (s: StatsSnapshot, m: "deliveries" | "messages") => s.per_minute[m].by_protocol.tally.reduce((a, b) => a + b);
    const s = await waitFor(
      async () => {
        const s = await snapshot();
        return s.connections.tally - before.connections.tally >= 2 && tot(s, "deliveries") > tot(before, "deliveries") ? s : null;
      },
      { timeout: STATS_LIMITS.flush_interval_ms * 3, interval: 100, what: "the Tally counts" },
    );
    expect(Date.now() - started).toBeLessThan(STATS_LIMITS.flush_interval_ms * 3);
    expect(tot(s, "messages") - tot(before, "messages")).toBeGreaterThanOrEqual(3);
    for (const x of sockets) x.close();
  });
});

describe("the connections counted", () => {
  it("a device that registers and leaves within the flush interval is not counted as connected after it left (its object holds nothing: it reports at the close)", async () => {
    const u = newUser();
    // The user's object's row in the stats object (its reporter key: stats-reporter.ts), with what is pending written first.
    const reporter = bytesToHex(sha256(utf8Encode(`stats:${env.TALLY_USER.idFromName(u.hex).toString()}`))).slice(0, 32);
    const connections = async () => {
      await snapshot();
      return runInDurableObject(env.RELAY_STATS.get(relayStats(env).id) as unknown as DurableObjectStub, (_o, st) => {
        const made = st.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'reporters'").toArray().length > 0;
        if (!made) return 0;
        return (
          st.storage.sql.exec<{ c: number }>("SELECT connections AS c FROM reporters WHERE reporter = ?", reporter).toArray()[0]?.c ?? 0
        );
      });
    };
    const res = await SELF.fetch(`http://relay.test/tally/v1/${u.npub}`, { headers: { Upgrade: "websocket" } });
    const s = new TestSocket(res.webSocket! as unknown as WebSocket);
    res.webSocket!.accept();
    const { challenge } = await s.next("challenge");
    s.send({ type: "register", user_id: u.npub, auth: makeAuthEvent({ secretKey: u.secretKey, challenge, relayUrl: "ws://relay.test" }) });
    await s.next("queue_drained");
    await waitFor(async () => (await connections()) === 1, { what: "the device counted" });
    s.close();
    await waitFor(async () => (await connections()) === 0, { what: "the device no longer counted" });
  });
});

describe("GET /status, /status.json and /metrics", () => {
  it("with no admin token configured, the page is open and says so", async () => {
    const res = await SELF.fetch("http://relay.test/status");
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain("No admin token is configured");
    expect(html).toContain("<svg");
    const json = (await (await SELF.fetch("http://relay.test/status.json")).json()) as { open: boolean; connections: object };
    expect(json.open).toBe(true);
    expect(Object.keys(json.connections).sort()).toEqual(["minca", "passnote", "tally"]);
  });

  it("with ADMIN_TOKEN set, both need Authorization: Bearer <token> (401 otherwise) and show no banner", async () => {
    const withToken = { ...env, ADMIN_TOKEN: "s3cret-token" };
    const client = { "cf-connecting-ip": ownAddress() };
    for (const path of ["/status", "/status.json", "/metrics"]) {
      const none = await app.fetch(new Request(`http://relay.test${path}`, { headers: client }), withToken);
      expect(none.status).toBe(401);
      expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
      const wrong = await app.fetch(
        new Request(`http://relay.test${path}`, { headers: { ...client, authorization: "Bearer s3cret-tokem" } }),
        withToken,
      );
      expect(wrong.status).toBe(401);
      const right = await app.fetch(
        new Request(`http://relay.test${path}`, { headers: { ...client, authorization: "Bearer s3cret-token" } }),
        withToken,
      );
      expect(right.status).toBe(200);
      const body = await right.text();
      expect(body).not.toContain("No admin token is configured");
    }
  });

  it("GET /metrics: the same counts as Prometheus text, one gauge per series with HELP and TYPE", async () => {
    const res = await SELF.fetch("http://relay.test/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const text = await res.text();
    const json = (await (await SELF.fetch("http://relay.test/status.json")).json()) as StatsSnapshot;
    expect(text).toContain("# TYPE edge_relay_connections gauge");
    expect(text).toContain(`edge_relay_connections{protocol="tally"} ${json.connections.tally}`);
    expect(text).toContain(`edge_relay_mailbox_items ${json.mailbox_items}`);
    expect(text).toMatch(/^edge_relay_messages_window\{protocol="passnote"\} \d+$/m);
    // Every sample line is name{labels} value, the exposition format's grammar.
    for (const line of text
      .trim()
      .split("\n")
      .filter((l) => !l.startsWith("#")))
      expect(line).toMatch(/^[a-z_]+(\{[a-z_]+="[^"\\\n]*"(,[a-z_]+="[^"\\\n]*")*\})? \d+(\.\d+)?$/);
  });

  it("shows counts only: no user id, topic or room id appears", async () => {
    const json = await (await SELF.fetch("http://relay.test/status.json")).text();
    const html = await (await SELF.fetch("http://relay.test/status")).text();
    const metrics = await (await SELF.fetch("http://relay.test/metrics")).text();
    for (const body of [json, html, metrics]) {
      expect(body).not.toMatch(/npub1[02-9ac-hj-np-z]{20,}/);
      expect(body).not.toMatch(/[0-9a-f]{32,}/);
    }
  });
});
