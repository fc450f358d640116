// The stats object merges reports in memory and writes them together (durable-objects/relay/
// stats-batch.ts): rows written are what its storage is billed by, and every object reports after
// each of its bursts. Each test uses a stats object of its own (a fresh name), so that only its
// reports reach it; its alarm is held off (moved an hour on, as a slow runtime would) and run
// explicitly with runDurableObjectAlarm: no sleeps.
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { RelayStats } from "../../durable-objects/relay/relay-stats";
import { STATS_LIMITS } from "../../shared/limits";
import { minuteOf, type StatsSnapshot, type Usage } from "../../server/stats";
import { applyMigrations } from "../../durable-objects/base/schema";
import { MIGRATIONS } from "../../migrations/index";

const HOUR = 3_600_000;
let made = 0;
/** A stats object no other test reports to. */
const freshStats = () => {
  const id = env.RELAY_STATS.idFromName(`stats-batch-${Date.now()}-${made++}`);
  return env.RELAY_STATS.get(id) as unknown as DurableObjectStub<RelayStats> & DurableObjectStub;
};
const reporter = (n: number) => n.toString(16).padStart(32, "0");

/** The object's alarm, moved an hour on so that the test decides when it runs; its time before. */
const holdOff = (stub: DurableObjectStub) =>
  runInDurableObject(stub, async (_o, state) => {
    const at = await state.storage.getAlarm();
    if (at !== null) await state.storage.setAlarm(Date.now() + HOUR);
    return at;
  });

/** Runs the object's alarm now, if it has one (its deferred work: the batch's write). */
const writeByAlarm = async (stub: DurableObjectStub) => {
  await holdOff(stub);
  await runDurableObjectAlarm(stub);
};

/** The rows the object's queries wrote (and read) since it was last asked. */
const taken = (stub: DurableObjectStub) =>
  runInDurableObject(stub, (o) => (o as unknown as { objectUsage: { take(): Usage } }).objectUsage.take());

/** Rows in one of the stats tables (0 before the schema exists). */
const rowsIn = (stub: DurableObjectStub, table: "totals" | "minutes" | "reporters" | "usage_by_class") =>
  runInDurableObject(stub, (_o, state) => {
    const sql = state.storage.sql;
    if (sql.exec("SELECT 1 FROM sqlite_master WHERE name = ?", table).toArray().length === 0) return 0;
    return sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).one().n;
  });

const last = STATS_LIMITS.window_minutes - 1;

describe("the stats object writes reports in batches", () => {
  it("a burst of reports writes each class's usage, each total and each minute row once (and an unchanged reporter's row not at all)", async () => {
    const stats = freshStats();
    const now = minuteOf(Date.now());
    const report = (i: number, connections: number) =>
      stats.report({
        reporter: reporter(i % 5),
        protocol: "tally",
        usage: { class: "TallyUser", n: { rpc: 1, rows_written: 2 } },
        gauges: { connections },
        counts: [
          { minute: now, metric: "messages", n: 2 },
          { minute: now, metric: "deliveries", n: 1 },
        ],
      });
    // The rows the stats object wrote so far, as it counts them itself (its own usage, taken and
    // written with every write: a snapshot's write of it is one row, counted by the next snapshot).
    const written = async () => ((await stats.snapshot()) as StatsSnapshot).usage.RelayStats?.rows_written ?? 0;
    // The first burst makes the schema and the rows.
    for (let i = 0; i < 5; i++) expect(await report(i, 1)).toBe(true);
    await writeByAlarm(stats);
    let before = await written();
    // A burst of 50 reports of the same classes and metrics, from the same 5 reporters, whose
    // values change once (to 2): each class's usage row (TallyUser's, the stats object's own),
    // each total (2), each minute row (2) and each reporter row (5) is written once (and the
    // snapshot's own usage row, 1).
    for (let i = 0; i < 50; i++) expect(await report(i, 2)).toBe(true);
    await writeByAlarm(stats);
    let burst = (await written()) - before;
    expect(burst).toBeGreaterThan(0);
    expect(burst).toBeLessThanOrEqual(2 + 2 + 2 + 5 + 1);
    // The same again, values unchanged: the reporters' rows are not written at all.
    before = await written();
    for (let i = 0; i < 50; i++) expect(await report(i, 2)).toBe(true);
    await writeByAlarm(stats);
    burst = (await written()) - before;
    expect(burst).toBeLessThanOrEqual(2 + 2 + 2 + 1);
    // Nothing was lost in the merge.
    const s = (await stats.snapshot()) as StatsSnapshot;
    expect(s.connections.tally).toBe(5 * 2);
    expect(s.per_minute.messages.by_protocol.tally[last]).toBe(105 * 2);
    expect(s.totals.deliveries.tally).toBe(105);
    expect(s.usage.TallyUser).toEqual({ rpc: 105, rows_written: 210 });
  });

  it("reports merged in memory are written by the stats object's alarm, a flush interval after the first, and the alarm sets none of its own", async () => {
    const stats = freshStats();
    const before = Date.now();
    const now = minuteOf(before);
    expect(
      await stats.report({
        reporter: reporter(1),
        protocol: "passnote",
        gauges: { connections: 3, rooms_open: 1 },
        counts: [{ minute: now, metric: "messages", n: 4 }],
      }),
    ).toBe(true);
    expect(await stats.report({ reporter: reporter(2), usage: { class: "RelayLedger", n: { alarm: 1 } }, gauges: {}, counts: [] })).toBe(
      true,
    );
    const at = await holdOff(stats);
    expect(at).not.toBeNull();
    expect(at!).toBeGreaterThanOrEqual(before);
    expect(at!).toBeLessThanOrEqual(Date.now() + STATS_LIMITS.flush_interval_ms);
    // Answered true, held in memory: nothing written yet (the schema only, made with the first report).
    for (const table of ["totals", "minutes", "reporters", "usage_by_class"] as const) expect(await rowsIn(stats, table)).toBe(0);
    expect(await runDurableObjectAlarm(stats)).toBe(true);
    expect(await rowsIn(stats, "totals")).toBe(1);
    expect(await rowsIn(stats, "minutes")).toBe(1);
    expect(await rowsIn(stats, "reporters")).toBe(1);
    expect(await rowsIn(stats, "usage_by_class")).toBe(2); // RelayLedger's and the stats object's own
    expect(await runInDurableObject(stats, (_o, state) => state.storage.getAlarm())).toBeNull();
  });

  it("a snapshot counts reports not yet written, and writes them", async () => {
    const stats = freshStats();
    const now = minuteOf(Date.now());
    expect(
      await stats.report({
        reporter: reporter(7),
        protocol: "minca",
        usage: { class: "MincaRoom", n: { socket_message: 3 } },
        gauges: { connections: 2, mailbox_items: 5 },
        counts: [{ minute: now, metric: "deliveries", n: 6 }],
      }),
    ).toBe(true);
    await holdOff(stats);
    expect(await rowsIn(stats, "totals")).toBe(0); // not written yet
    const s = (await stats.snapshot()) as StatsSnapshot;
    expect(s.connections.minca).toBe(2);
    expect(s.mailbox_items).toBe(5);
    expect(s.per_minute.deliveries.by_protocol.minca[last]).toBe(6);
    expect(s.totals.deliveries.minca).toBe(6);
    expect(s.usage.MincaRoom).toEqual({ socket_message: 3 });
    // Written by the snapshot: the alarm finds nothing left, and nothing is counted twice.
    expect(await rowsIn(stats, "totals")).toBe(1);
    await taken(stats);
    expect(await runDurableObjectAlarm(stats)).toBe(true);
    expect((await taken(stats)).rows_written ?? 0).toBe(0);
    expect(((await stats.snapshot()) as StatsSnapshot).totals.deliveries.minca).toBe(6);
  });

  it("past the pending bound the batch is written at once, before its alarm", async () => {
    const stats = freshStats();
    const bound = STATS_LIMITS.max_pending_keys;
    // Each report adds one key: its reporter's current values.
    const report = (i: number) => stats.report({ reporter: reporter(i + 1), protocol: "tally", gauges: { connections: 1 }, counts: [] });
    expect(await report(0)).toBe(true);
    await holdOff(stats);
    for (let i = 1; i < bound - 1; i++) expect(await report(i)).toBe(true);
    expect(await rowsIn(stats, "reporters")).toBe(0); // bound - 1 keys held
    expect(await report(bound - 1)).toBe(true);
    expect(await rowsIn(stats, "reporters")).toBe(bound);
    // The alarm that was set finds nothing left.
    await taken(stats);
    expect(await runDurableObjectAlarm(stats)).toBe(true);
    expect((await taken(stats)).rows_written ?? 0).toBe(0);
    expect(((await stats.snapshot()) as StatsSnapshot).connections.tally).toBe(bound);
  });

  it("the batch's write deletes minute rows that left the window", async () => {
    const stats = freshStats();
    const now = minuteOf(Date.now());
    const old = now - STATS_LIMITS.window_minutes - 3;
    expect(await stats.report({ reporter: reporter(9), protocol: "tally", gauges: {}, counts: [] })).toBe(true);
    await runInDurableObject(stats, (_o, state) => {
      state.storage.sql.exec("INSERT INTO minutes (minute, protocol, metric, n) VALUES (?, 'tally', 'messages', 9)", old);
    });
    await holdOff(stats);
    expect(
      await stats.report({ reporter: reporter(9), protocol: "tally", gauges: {}, counts: [{ minute: now, metric: "messages", n: 1 }] }),
    ).toBe(true);
    await writeByAlarm(stats);
    const minutes = await runInDurableObject(stats, (_o, state) =>
      state.storage.sql.exec<{ minute: number }>("SELECT minute FROM minutes ORDER BY minute").toArray(),
    );
    expect(minutes.map((m) => m.minute)).toEqual([now]);
  });

  it("RelayStats 0007_keyed_reporters: reporters and totals are kept, keyed without a rowid; a new reporter and a new total write one row each", async () => {
    const stub = env.RELAY_POLICY.get(env.RELAY_POLICY.idFromName(`stats-0007-${Date.now()}-${made++}`));
    const out = await runInDurableObject(stub, (inst, state) => {
      const sql = state.storage.sql;
      const usage = (inst as unknown as { objectUsage: { take(): Usage } }).objectUsage;
      const insert = () => {
        usage.take();
        sql.exec(
          "INSERT INTO reporters (reporter, protocol, connections, updated_at) VALUES (?, 'tally', 1, 5)",
          reporter(0x1000 + made++),
        );
        sql.exec("INSERT INTO totals (protocol, metric, n) VALUES ('minca', ?, 1)", `m${made++}`);
        return usage.take().rows_written ?? 0;
      };
      applyMigrations(state.storage, MIGRATIONS.RelayStats.slice(0, 6));
      sql.exec(
        "INSERT INTO reporters (reporter, protocol, connections, envelopes_stored, updated_at) VALUES (?, 'tally', 2, 3, 4)",
        reporter(1),
      );
      sql.exec("INSERT INTO totals (protocol, metric, n) VALUES ('tally', 'deliveries', 9)");
      const before = insert();
      applyMigrations(state.storage, MIGRATIONS.RelayStats);
      return {
        before,
        after: insert(),
        reporter: sql.exec("SELECT * FROM reporters WHERE reporter = ?", reporter(1)).toArray(),
        total: sql.exec("SELECT * FROM totals WHERE protocol = 'tally'").toArray(),
      };
    });
    expect(out).toEqual({
      before: 4,
      after: 2,
      reporter: [
        { reporter: reporter(1), protocol: "tally", connections: 2, envelopes_stored: 3, rooms_open: 0, mailbox_items: 0, updated_at: 4 },
      ],
      total: [{ protocol: "tally", metric: "deliveries", n: 9 }],
    });
  });
});
