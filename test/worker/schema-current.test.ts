// A new object's schema in one step (durable-objects/base/schema.ts, migrations/<Class>/current.sql):
// a fresh object applies its class's current schema with its last migration recorded (it stands
// for every one before it), in one transaction, instead of each migration in turn (tables made to be dropped, a row for each step).
// The current schema is kept equal to the migrations applied one by one, for every class.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MIGRATIONS, currentSchema, type Migration } from "../../migrations/index";
import { applyFresh, applyMigrations } from "../../durable-objects/base/schema";
import type { Usage } from "../../server/stats";

let n = 0;
/** A fresh object to run SQL in (its class does not matter: nothing of it is made before the test writes). */
const freshStub = () => env.RELAY_POLICY.get(env.RELAY_POLICY.idFromName(`schema-current-${Date.now()}-${++n}`));

/** The migrations recorded in `_migrations`, by name. */
const recorded = (sql: SqlStorage) =>
  sql
    .exec<{ name: string }>("SELECT name FROM _migrations ORDER BY name")
    .toArray()
    .map((r) => r.name);

/** What a schema is: every table, index and trigger with its SQL (comments and spacing aside), and the last migration applied (the last recorded). */
function schemaOf(sql: SqlStorage): { objects: string[]; applied: string | undefined } {
  const norm = (s: string | null) =>
    (s ?? "")
      .replace(/--[^\n]*/g, "")
      .replace(/\s+/g, " ")
      .replace(/\s*([(),])\s*/g, "$1")
      .replace(/"/g, "")
      .trim();
  return {
    objects: sql
      .exec<{ type: string; name: string; sql: string | null }>(
        // sqlite_sequence is SQLite's own, made with a table with AUTOINCREMENT and kept (empty) when such a table is dropped
        "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE '_cf_%' AND name != 'sqlite_sequence' ORDER BY type, name",
      )
      .toArray()
      .map((r) => `${r.type} ${r.name}: ${norm(r.sql)}`),
    applied: recorded(sql).at(-1),
  };
}

/** Rows written by `f` in the object (the object's usage counters: every cursor's rowsWritten). */
function rowsWritten(inst: unknown, f: () => void): number {
  const usage = (inst as { objectUsage: { take(): Usage } }).objectUsage;
  usage.take();
  f();
  return usage.take().rows_written ?? 0;
}

describe("a fresh object's schema in one step", () => {
  for (const [cls, migrations] of Object.entries(MIGRATIONS)) {
    if (currentSchema(migrations) === undefined) continue;
    it(`${cls}: the current schema (current.sql) equals its ${migrations.length} migrations applied one by one`, async () => {
      const stepwise = await runInDurableObject(freshStub(), (_o, state) => {
        applyMigrations(state.storage, migrations);
        return schemaOf(state.storage.sql);
      });
      const fresh = await runInDurableObject(freshStub(), (_o, state) => {
        applyFresh(state.storage, migrations);
        return schemaOf(state.storage.sql);
      });
      expect(fresh, `migrations/${cls}/current.sql must make what its migrations make`).toEqual(stepwise);
    });
  }

  it("a fresh object applies its current schema in one step: a new Tally user's tables cost 5 rows written (16 when its four migrations run one by one)", async () => {
    const stepwise = await runInDurableObject(freshStub(), (inst, state) =>
      rowsWritten(inst, () => applyMigrations(state.storage, MIGRATIONS.TallyUser)),
    );
    const fresh = await runInDurableObject(freshStub(), (inst, state) =>
      rowsWritten(inst, () => applyFresh(state.storage, MIGRATIONS.TallyUser)),
    );
    expect(fresh).toBeLessThan(stepwise);
    expect(fresh).toBeLessThanOrEqual(5);
  });

  it("a fresh object records its migrations in one row: the class's last; a new Tally user's schema writes 3 rows fewer than with a row per migration", async () => {
    for (const [cls, migrations] of Object.entries(MIGRATIONS)) {
      const names = await runInDurableObject(freshStub(), (_o, state) => {
        applyFresh(state.storage, migrations);
        return recorded(state.storage.sql);
      });
      expect(names, cls).toEqual([migrations[migrations.length - 1].name]);
    }
    const fresh = await runInDurableObject(freshStub(), (inst, state) =>
      rowsWritten(inst, () => applyFresh(state.storage, MIGRATIONS.TallyUser)),
    );
    // its tables' rows in sqlite_master and one of record: 8 when each of its four migrations had a row
    expect(fresh).toBeLessThanOrEqual(8 - 3);
  });

  it("an object recorded with its last migration alone applies only the migrations added after it; code that does not know a later recorded migration applies none", async () => {
    const later: Migration = { name: "9999_later", sql: "CREATE TABLE later_things (k TEXT PRIMARY KEY) WITHOUT ROWID;" };
    const out = await runInDurableObject(freshStub(), (_o, state) => {
      const sql = state.storage.sql;
      applyFresh(state.storage, MIGRATIONS.TallyUser);
      sql.exec("INSERT INTO meta (key, value) VALUES ('user_hex', 'ab')");
      sql.exec("INSERT INTO queue (from_hex, id, seq, bytes, expires_at, body) VALUES ('cd', 'x', 1, 2, 9, '{}')");
      // every earlier migration run again would fail (its tables are there) or lose rows
      applyMigrations(state.storage, [...MIGRATIONS.TallyUser, later]);
      const afterLater = schemaOf(sql);
      // the code rolled back to a version without the later migration: nothing is applied again
      applyMigrations(state.storage, MIGRATIONS.TallyUser);
      return {
        afterLater,
        again: schemaOf(sql),
        recorded: recorded(sql),
        meta: sql.exec("SELECT key, value FROM meta").toArray(),
        queue: sql.exec("SELECT id FROM queue").toArray(),
      };
    });
    expect(out.recorded).toEqual([MIGRATIONS.TallyUser[MIGRATIONS.TallyUser.length - 1].name, later.name]);
    expect(out.afterLater.objects).toContain("table later_things: CREATE TABLE later_things(k TEXT PRIMARY KEY)WITHOUT ROWID");
    expect(out.again).toEqual(out.afterLater);
    expect(out.meta).toEqual([{ key: "user_hex", value: "ab" }]);
    expect(out.queue).toEqual([{ id: "x" }]);
  });

  it("an object made with a row per migration reads the same: it applies only the migrations added after its last", async () => {
    const later: Migration = { name: "9999_later", sql: "CREATE TABLE later_things (k TEXT PRIMARY KEY) WITHOUT ROWID;" };
    const names = await runInDurableObject(freshStub(), (_o, state) => {
      const sql = state.storage.sql;
      // as an earlier version recorded a fresh object: every migration, one row each
      sql.exec("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)");
      sql.exec(currentSchema(MIGRATIONS.TallyUser)!);
      for (const m of MIGRATIONS.TallyUser) sql.exec("INSERT INTO _migrations (name, applied_at) VALUES (?, 1)", m.name);
      applyMigrations(state.storage, [...MIGRATIONS.TallyUser, later]);
      return recorded(sql);
    });
    expect(names).toEqual([...MIGRATIONS.TallyUser.map((m) => m.name), later.name]);
  });

  it("0004_keyed_tables: an object made before keeps its meta, contacts and introductions, keyed without a rowid; a new contact then writes one row", async () => {
    const out = await runInDurableObject(freshStub(), (inst, state) => {
      const sql = state.storage.sql;
      applyMigrations(state.storage, MIGRATIONS.TallyUser.slice(0, 3));
      sql.exec("INSERT INTO meta (key, value) VALUES ('user_hex', 'ab'), ('lease_bytes', '70000')");
      sql.exec("INSERT INTO contacts (peer_hex, sent, received, at) VALUES ('cd', 1, 0, 5)");
      sql.exec("INSERT INTO introductions (device_id, peer_hex, peer_device) VALUES ('d1', 'cd', 'd2')");
      applyMigrations(state.storage, MIGRATIONS.TallyUser);
      const written = rowsWritten(inst, () => sql.exec("INSERT INTO contacts (peer_hex, sent, received, at) VALUES ('ef', 0, 1, 6)"));
      return {
        meta: sql.exec("SELECT key, value FROM meta ORDER BY key").toArray(),
        contacts: sql.exec("SELECT peer_hex, sent, received, at FROM contacts ORDER BY peer_hex").toArray(),
        introductions: sql.exec("SELECT device_id, peer_hex, peer_device FROM introductions").toArray(),
        withoutRowid: sql
          .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%WITHOUT ROWID' ORDER BY name")
          .toArray()
          .map((r) => r.name),
        written,
      };
    });
    expect(out).toEqual({
      meta: [
        { key: "lease_bytes", value: "70000" },
        { key: "user_hex", value: "ab" },
      ],
      contacts: [
        { peer_hex: "cd", sent: 1, received: 0, at: 5 },
        { peer_hex: "ef", sent: 0, received: 1, at: 6 },
      ],
      introductions: [{ device_id: "d1", peer_hex: "cd", peer_device: "d2" }],
      withoutRowid: ["_migrations", "contacts", "introductions", "meta", "queue"],
      written: 1,
    });
  });

  it("RelayStats 0006_one_row_per_report_part: the usage counted before is kept, one row per class, and a report's usage of five metrics writes one row", async () => {
    const out = await runInDurableObject(freshStub(), (inst, state) => {
      const sql = state.storage.sql;
      applyMigrations(state.storage, MIGRATIONS.RelayStats.slice(0, 5));
      sql.exec(
        "INSERT INTO usage (class, metric, n) VALUES ('TallyUser', 'rpc', 4), ('TallyUser', 'rows_read', 30), ('RelayLedger', 'alarm', 1)",
      );
      sql.exec("INSERT INTO minutes (minute, protocol, metric, n) VALUES (7, 'tally', 'deliveries', 3)");
      applyMigrations(state.storage, MIGRATIONS.RelayStats);
      const usage = sql
        .exec("SELECT class, key AS metric, value AS n FROM usage_by_class, json_each(usage_by_class.n) ORDER BY class, metric")
        .toArray();
      const written = rowsWritten(inst, () =>
        sql.exec(
          "INSERT INTO usage_by_class (class, n) VALUES ('MincaMailbox', ?) ON CONFLICT (class) DO UPDATE SET n = excluded.n",
          JSON.stringify({ rpc: 1, fetch: 2, alarm: 1, rows_read: 9, rows_written: 3 }),
        ),
      );
      return { usage, minutes: sql.exec("SELECT minute, protocol, metric, n FROM minutes").toArray(), written };
    });
    expect(out).toEqual({
      usage: [
        { class: "RelayLedger", metric: "alarm", n: 1 },
        { class: "TallyUser", metric: "rows_read", n: 30 },
        { class: "TallyUser", metric: "rpc", n: 4 },
      ],
      minutes: [{ minute: 7, protocol: "tally", metric: "deliveries", n: 3 }],
      written: 1,
    });
  });

  it("an object whose schema an earlier version made still migrates step by step: the queue stored under 0002 is kept", async () => {
    const rows = await runInDurableObject(freshStub(), (_o, state) => {
      applyMigrations(state.storage, MIGRATIONS.TallyUser.slice(0, 2));
      state.storage.sql.exec("INSERT INTO queue (from_hex, id, body, bytes, queued_at, expires_at) VALUES ('aa', 'x', '{}', 2, 1, 2)");
      applyMigrations(state.storage, MIGRATIONS.TallyUser);
      return state.storage.sql.exec<{ id: string }>("SELECT id FROM queue").toArray();
    });
    expect(rows).toEqual([{ id: "x" }]);
  });
});
