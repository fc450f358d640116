// What the objects cost to run (durable-objects/base/object-usage.ts): entries by cause and SQLite
// rows, reported with the stats and exposed in /metrics; and that an idle relay (devices registered
// and pinging, no traffic) enters no object and leaves no alarm that would wake one.
import { SELF, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { relayStats } from "../../server/relay-objects";
import { RELAY_LEDGER_NAME } from "../../durable-objects/relay/relay-ledger";
import type { Usage } from "../../server/stats";
import { runDeferred } from "../helpers/deferred";
import { newUser, opaqueEnvelope } from "../helpers/tally";
import { exchangeEnvelopes, registerDevice, stubOf } from "../helpers/tally-user";
import { waitFor } from "../helpers/wait";

/** The usage the object counted since it last reported (and it starts again). */
const taken = (stub: DurableObjectStub) =>
  runInDurableObject(stub, (o) => (o as unknown as { objectUsage: { take(): Usage } }).objectUsage.take());

async function metrics(): Promise<string> {
  return (await SELF.fetch("http://relay.test/metrics")).text();
}

function sample(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

describe("object usage", () => {
  it("entries are counted by cause (fetch, socket_message, rpc) with the rows the queries read and wrote; a ping the runtime answers is none", async () => {
    const alice = newUser();
    const bob = newUser();
    // What the two objects counted: what they reported (the stats object's figures for the class,
    // this file's own runtime) and what they have not reported yet.
    const reported = async (cause: string) => sample(await metrics(), `edge_relay_object_wakes_total{class="TallyUser",cause="${cause}"}`);
    const before = { fetch: await reported("fetch"), socket_message: await reported("socket_message"), rpc: await reported("rpc") };
    const rowsBefore = {
      read: sample(await metrics(), 'edge_relay_sqlite_rows_read_total{class="TallyUser"}'),
      written: sample(await metrics(), 'edge_relay_sqlite_rows_written_total{class="TallyUser"}'),
    };
    const pending: Usage = {};
    const takeBoth = async () => {
      for (const stub of [stubOf(alice), stubOf(bob)])
        for (const [k, n] of Object.entries(await taken(stub))) pending[k as keyof Usage] = (pending[k as keyof Usage] ?? 0) + n;
    };
    const counted = async (cause: "fetch" | "socket_message" | "rpc") => {
      await takeBoth();
      return (await reported(cause)) - before[cause] + (pending[cause] ?? 0);
    };
    const a = await registerDevice(alice);
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "kept") });
    expect((await a.next("queued")).status).toBe("stored");
    await waitFor(async () => (await counted("fetch")) === 1 && (await counted("socket_message")) === 2 && (await counted("rpc")) >= 1, {
      what: "alice's fetch, her register and queue_peer_envelope, bob's deliverAll",
    });
    // bob stored the envelope: rows read and written, reported or not yet
    const rows = async (what: "read" | "written") =>
      sample(await metrics(), `edge_relay_sqlite_rows_${what}_total{class="TallyUser"}`) -
      rowsBefore[what] +
      (pending[`rows_${what}`] ?? 0);
    expect(await rows("written")).toBeGreaterThan(0);
    expect(await rows("read")).toBeGreaterThan(0);
    await takeBoth();
    for (let i = 0; i < 5; i++) {
      a.send({ type: "ping" });
      await a.next("pong");
    }
    expect(await taken(stubOf(alice))).toEqual({});
  });

  it("edge_relay_object_wakes_total{class,cause} and edge_relay_sqlite_rows_{read,written}_total count what the objects report", async () => {
    const before = await metrics();
    await relayStats(env).report({
      reporter: "e".repeat(32),
      usage: { class: "TallyUser", n: { rpc: 4, alarm: 1, rows_read: 30, rows_written: 7 } },
      gauges: {},
      counts: [],
    });
    const after = await metrics();
    const d = (s: string) => sample(after, s) - sample(before, s);
    expect(after).toContain("# TYPE edge_relay_object_wakes_total counter");
    expect(d('edge_relay_object_wakes_total{class="TallyUser",cause="rpc"}')).toBe(4);
    expect(d('edge_relay_object_wakes_total{class="TallyUser",cause="alarm"}')).toBe(1);
    expect(d('edge_relay_sqlite_rows_read_total{class="TallyUser"}')).toBe(30);
    expect(d('edge_relay_sqlite_rows_written_total{class="TallyUser"}')).toBe(7);
    // The stats object counts its own entries without reporting to itself.
    expect(after).toMatch(/^edge_relay_object_wakes_total\{class="RelayStats",cause="rpc"\} [1-9]/m);
  });

  it("idle costs nothing: a relay with registered devices that ping, contacts and a lease held, enters no object and has no alarm due within an hour", async () => {
    const alice = newUser();
    const bob = newUser();
    const carol = newUser();
    const a = await registerDevice(alice, true);
    const b = await registerDevice(bob);
    const c = await registerDevice(carol);
    await exchangeEnvelopes(a, alice, b, bob); // contacts kept: a lease held at the ledger
    const users = [alice, bob, carol].map(stubOf);
    // The stats object last: every other object's alarm reports to it, and its own alarm writes those reports.
    const relayWide = [
      env.RELAY_LEDGER.get(env.RELAY_LEDGER.idFromName(RELAY_LEDGER_NAME)) as unknown as DurableObjectStub,
      env.RELAY_STATS.get(relayStats(env).id) as unknown as DurableObjectStub,
    ];
    // The exchange's deferred work (its stats reports, the ledger's figures, the stats object's
    // write of the reports) runs from one alarm per object, a flush interval after it
    // (docs/objects.md, "Deferred work"): run it now.
    for (const stub of [...users, ...relayWide]) await runDeferred(stub);
    for (const stub of users) await taken(stub);
    // An hour of pings (the SDK pings every 25 s): answered by the runtime, none reaches an object.
    for (let i = 0; i < 3600 / 25; i++) for (const s of [a, b, c]) s.send({ type: "ping" });
    for (const s of [a, b, c]) for (let i = 0; i < 3600 / 25; i++) await s.next("pong");
    for (const stub of users) expect(await taken(stub)).toEqual({});
    // And nothing is set to wake an object within the hour: no alarm, or one past it (stored data that expires).
    const hourFromNow = Date.now() + 3_600_000;
    for (const stub of [...users, ...relayWide]) {
      const alarm = await runInDurableObject(stub, (_o, state) => state.storage.getAlarm());
      expect(alarm === null || alarm > hourFromNow, `alarm at ${alarm}`).toBe(true);
    }
    // Carol exchanged nothing: her object holds nothing and has no alarm at all.
    expect(await runDurableObjectAlarm(users[2])).toBe(false);
  });
});
