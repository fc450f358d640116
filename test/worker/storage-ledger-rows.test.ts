// What the storage ledger writes (durable-objects/relay/relay-ledger.ts, migration
// 0006_keyed_leases): rows written are what a Durable Object's storage is billed by, and each index
// entry written is one more. A lease is keyed without a rowid by (kind, holder), and its two
// indexes hold only the leases their queries look for (not yet audited; lending slack), which the
// audit's and the reclaim's queries still use, in their order, with no scan of every lease.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { TestRelayLedger as RelayLedger } from "./test-objects";
import { applyMigrations } from "../../durable-objects/base/schema";
import { MIGRATIONS } from "../../migrations/index";
import { STORAGE_LIMITS } from "../../shared/limits";
import type { Usage } from "../../server/stats";

let n = 0;
/** A ledger of its own (the relay's one ledger is shared by every test). */
const freshLedger = () =>
  env.RELAY_LEDGER.get(env.RELAY_LEDGER.idFromName(`ledger-rows-${Date.now()}-${++n}`)) as unknown as DurableObjectStub<RelayLedger>;
/** A holder's opaque id (a Tally user that holds nothing: asked, it gives everything back). */
const holder = () => env.TALLY_USER.newUniqueId().toString();

interface LedgerInside {
  objectUsage: { take(): Usage };
  sql: SqlStorage;
  schema: { present: boolean | undefined };
  reclaim(kind: string, claimer: string, short: number): Promise<number>;
  onAlarm(now: number): Promise<number | null>;
  nextAudit(): number | null;
}
const inside = (inst: RelayLedger) => inst as unknown as LedgerInside;

const AGE_MS = STORAGE_LIMITS.lease_audit_age_seconds * 1000;

describe("the storage ledger's rows", () => {
  it("rows written for a new lease: its row, its index entries and the kind's totals, at most 4", async () => {
    const written = await runInDurableObject(freshLedger(), async (inst: RelayLedger) => {
      // the first lease makes the ledger's schema and the kind's totals row
      expect(await inst.claim("tally", holder(), 1_000, 4_000)).toEqual({ ok: true, granted: 4_000 });
      inside(inst).objectUsage.take();
      // a lease granted ahead of need: it lends slack, and is not audited yet
      expect(await inst.claim("tally", holder(), 1_000, 4_000)).toEqual({ ok: true, granted: 4_000 });
      return inside(inst).objectUsage.take().rows_written ?? 0;
    });
    expect(written).toBeLessThanOrEqual(4);
  });

  it("rows written for a lease's change: its row, its index entries and the kind's totals, at most 4", async () => {
    const written = await runInDurableObject(freshLedger(), async (inst: RelayLedger) => {
      const h = holder();
      expect(await inst.claim("tally", h, 1_000, 4_000)).toEqual({ ok: true, granted: 4_000 });
      const o = inside(inst);
      o.objectUsage.take();
      const out: number[] = [];
      // what it holds changes; it grows past its lease; it gives back its slack
      expect(await inst.claim("tally", h, 2_000, 4_000)).toEqual({ ok: true, granted: 4_000 });
      out.push(o.objectUsage.take().rows_written ?? 0);
      expect(await inst.claim("tally", h, 5_000, 8_000)).toEqual({ ok: true, granted: 8_000 });
      out.push(o.objectUsage.take().rows_written ?? 0);
      expect(await inst.release("tally", h, 5_000)).toBe(5_000);
      out.push(o.objectUsage.take().rows_written ?? 0);
      return out;
    });
    for (const w of written) expect(w).toBeLessThanOrEqual(4);
  });

  it("the audit's and the reclaim's queries read the leases through an index, in their order, with no scan of every lease", async () => {
    const seen = await runInDurableObject(freshLedger(), async (inst: RelayLedger, st) => {
      const o = inside(inst);
      const real = st.storage.sql;
      const queries = new Map<string, SqlStorageValue[]>();
      o.sql = new Proxy(real, {
        get(target, prop) {
          if (prop !== "exec") return Reflect.get(target, prop, target);
          return (q: string, ...bindings: SqlStorageValue[]) => {
            queries.set(q, bindings);
            return target.exec(q, ...bindings);
          };
        },
      });
      const holders = Array.from({ length: 4 }, () => holder());
      for (const [i, h] of holders.entries()) await inst.claim("tally", h, 1_000, 2_000 + i * 1_000);
      // lenders, most slack first; then every lease of audit age, oldest first
      await o.reclaim("tally", holders[0], 1);
      real.exec("UPDATE leases SET updated_at = updated_at - ?", AGE_MS + 1);
      await o.onAlarm(Date.now());
      o.nextAudit();
      return [...queries]
        .filter(([q]) => /\bFROM leases\b|^UPDATE leases\b/.test(q))
        .map(([q, b]) => ({
          query: q,
          plan: real
            .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${q}`, ...b)
            .toArray()
            .map((r) => r.detail),
        }));
    });
    const planOf = (pattern: RegExp) => seen.find((s) => pattern.test(s.query))?.plan;
    expect(planOf(/ORDER BY bytes - held DESC/)).toEqual([expect.stringMatching(/^SEARCH leases USING INDEX leases_by_slack \(kind=\?\)/)]);
    expect(planOf(/WHERE audited = 0 AND updated_at <= \?/)).toEqual([
      expect.stringMatching(/^SEARCH leases USING (COVERING )?INDEX leases_to_audit \(updated_at<\?\)/),
    ]);
    expect(planOf(/MIN\(updated_at\)/)).toEqual([expect.stringMatching(/^SEARCH leases USING (COVERING )?INDEX leases_to_audit/)]);
    for (const { query, plan } of seen) {
      expect(
        plan.filter((d) => /^SCAN leases|TEMP B-TREE/.test(d)),
        query,
      ).toEqual([]);
    }
  });

  it("0006_keyed_leases: a ledger made by the earlier migrations keeps every lease, its totals and audit state; a new lease then writes at most 4 rows", async () => {
    const now = Date.now();
    const [h1, h2, h3] = [holder(), holder(), holder()];
    const leases = [
      { kind: "mailbox", holder: h3, bytes: 7_000, held: 1_000, updated_at: now - 10, audited: 0 },
      { kind: "tally", holder: h1, bytes: 5_000, held: 3_000, updated_at: now - 100, audited: 0 },
      { kind: "tally", holder: h2, bytes: 2_000, held: 2_000, updated_at: now - 50, audited: 1 },
    ];
    const out = await runInDurableObject(freshLedger(), async (inst: RelayLedger, st) => {
      const sql = st.storage.sql;
      applyMigrations(st.storage, MIGRATIONS.RelayLedger.slice(0, 5));
      for (const l of leases)
        sql.exec(
          "INSERT INTO leases (kind, holder, bytes, held, updated_at, audited) VALUES (?, ?, ?, ?, ?, ?)",
          l.kind,
          l.holder,
          l.bytes,
          l.held,
          l.updated_at,
          l.audited,
        );
      sql.exec("INSERT INTO totals (kind, bytes, holders, held) VALUES ('tally', 7000, 2, 5000), ('mailbox', 7000, 1, 1000)");
      // This instance looks at its schema again, as a new instance of the new code would.
      inside(inst).schema.present = undefined;
      const report = await inst.snapshot();
      const nextAudit = inside(inst).nextAudit();
      inside(inst).objectUsage.take();
      const granted = await inst.claim("tally", holder(), 1_000, 4_000);
      const written = inside(inst).objectUsage.take().rows_written ?? 0;
      return {
        report: { tally: report.tally.reserved_bytes, mailbox: report.mailbox.reserved_bytes, holders: report.tally.holders },
        nextAudit,
        leases: sql
          .exec(
            "SELECT kind, holder, bytes, held, updated_at, audited FROM leases WHERE holder IN (?, ?, ?) ORDER BY kind, updated_at",
            h1,
            h2,
            h3,
          )
          .toArray(),
        totals: sql.exec("SELECT kind, bytes, holders, held FROM totals ORDER BY kind").toArray(),
        migrations: sql
          .exec<{ name: string }>("SELECT name FROM _migrations ORDER BY name")
          .toArray()
          .map((r) => r.name),
        withoutRowid: sql
          .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%WITHOUT ROWID' ORDER BY name")
          .toArray()
          .map((r) => r.name),
        indexes: sql
          .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'leases' ORDER BY name")
          .toArray()
          .map((r) => r.name),
        granted,
        written,
      };
    });
    expect(out).toEqual({
      report: { tally: 7_000, mailbox: 7_000, holders: 2 },
      // the oldest lease not yet audited comes of age first; the audited one is not asked again
      nextAudit: now - 100 + AGE_MS,
      leases,
      totals: [
        { kind: "mailbox", bytes: 7_000, holders: 1, held: 1_000 },
        { kind: "tally", bytes: 11_000, holders: 3, held: 6_000 },
      ],
      migrations: MIGRATIONS.RelayLedger.map((m) => m.name),
      withoutRowid: expect.arrayContaining(["leases", "totals"]),
      indexes: ["leases_by_slack", "leases_to_audit"],
      granted: { ok: true, granted: 4_000 },
      written: expect.any(Number),
    });
    expect(out.written).toBeLessThanOrEqual(4);
  });
});
