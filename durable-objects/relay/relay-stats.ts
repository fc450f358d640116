// The operator's counters (docs/browser.md, "The status page"): one RelayStats object per relay,
// which the StatsReporter every other object keeps (base/stats-reporter.ts) reports to. No message ever waits on the stats object: a
// reporter adds to counts in memory and, at most every STATS_LIMITS.flush_interval_ms, sends one
// report (its per-minute counts and its current values, computed then) by RPC from a timer,
// off the message path. A failed report keeps its counts for the next one.
import { StoredObject } from "../base/stored-object";
import { MIGRATIONS } from "../../migrations/index";
import { STATS_LIMITS } from "../../shared/limits";
import { STORAGE_KINDS } from "../../shared/storage";
import {
  buildSnapshot,
  emptyStorage,
  storageReportSchema,
  type StorageReport,
  minuteOf,
  parseStatsReport,
  type GaugeRow,
  type MinuteRow,
  type StatsSnapshot,
  type TotalRow,
  type Usage,
  type UsageRow,
} from "../../server/stats";

export { relayStats } from "../../server/relay-objects";

interface StatsEnv {
  RELAY_STATS?: DurableObjectNamespace<RelayStats>;
}

interface StorageRow extends Record<string, SqlStorageValue> {
  kind: string;
  reserved_bytes: number;
  holders: number;
  total_bytes: number;
}

export class RelayStats extends StoredObject<StatsEnv> {
  constructor(ctx: DurableObjectState, env: StatsEnv) {
    super(ctx, env, { migrations: MIGRATIONS.RelayStats, ownUsage: true });
  }

  /** Every per-minute row older than this minute has been deleted (by this instance). */
  private prunedBefore = -Infinity;

  /** RPC: one object's report; false (and nothing kept) when it is not a report of counts. */
  async report(input: unknown): Promise<boolean> {
    const r = parseStatsReport(input); // statsReportSchema's rule, without zod's cost (server/stats.ts)
    if (r === null) return false;
    const now = Date.now();
    const oldest = minuteOf(now) - STATS_LIMITS.window_minutes + 1;
    const g = r.gauges;
    this.schema.ensure();
    const own = this.objectUsage.take();
    this.ctx.storage.transactionSync(() => {
      // Usage: the reporter's, and this object's own (kept here: a report to itself would wake it).
      if (r.usage) this.addUsage(r.usage.class, r.usage.n);
      this.addUsage(this.objectUsage.className, own);
      if (r.protocol === undefined) return; // an object that reports its usage only
      const protocol = r.protocol;
      const values = [g.connections ?? 0, g.envelopes_stored ?? 0, g.rooms_open ?? 0, g.mailbox_items ?? 0];
      if (values.every((v) => v === 0)) this.sql.exec("DELETE FROM reporters WHERE reporter = ?", r.reporter);
      else {
        this.sql.exec(
          `INSERT INTO reporters (reporter, protocol, connections, envelopes_stored, rooms_open, mailbox_items, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (reporter) DO UPDATE SET protocol = excluded.protocol, connections = excluded.connections,
             envelopes_stored = excluded.envelopes_stored, rooms_open = excluded.rooms_open,
             mailbox_items = excluded.mailbox_items, updated_at = excluded.updated_at`,
          r.reporter,
          protocol,
          ...values,
          now,
        );
      }
      for (const c of r.counts) {
        if (c.n === 0) continue;
        this.sql.exec(
          "INSERT INTO totals (protocol, metric, n) VALUES (?, ?, ?) ON CONFLICT (protocol, metric) DO UPDATE SET n = n + excluded.n",
          protocol,
          c.metric,
          c.n,
        );
        if (c.minute < oldest) continue;
        this.sql.exec(
          `INSERT INTO minutes (minute, protocol, metric, n) VALUES (?, ?, ?, ?)
           ON CONFLICT (minute, protocol, metric) DO UPDATE SET n = n + excluded.n`,
          c.minute,
          protocol,
          c.metric,
          c.n,
        );
      }
      // Rows older than the window go when the window moves (no row older than `oldest` is added
      // above), not on every report: once per minute per instance.
      if (oldest > this.prunedBefore) this.sql.exec("DELETE FROM minutes WHERE minute < ?", oldest);
    });
    this.prunedBefore = Math.max(this.prunedBefore, oldest);
    return true;
  }

  /** Adds `usage` to the class's counters: one row per class (its metrics as a JSON object), so a report writes one row for it. */
  private addUsage(cls: string, usage: Usage): void {
    const add = Object.entries(usage).filter(([, n]) => n > 0);
    if (add.length === 0) return;
    const row = this.sql.exec<{ n: string }>("SELECT n FROM usage_by_class WHERE class = ?", cls).toArray()[0];
    const sum = row ? (JSON.parse(row.n) as Record<string, number>) : {};
    for (const [metric, n] of add) sum[metric] = (sum[metric] ?? 0) + n;
    this.sql.exec(
      "INSERT INTO usage_by_class (class, n) VALUES (?, ?) ON CONFLICT (class) DO UPDATE SET n = excluded.n",
      cls,
      JSON.stringify(sum),
    );
  }

  /** RPC: the storage ledger's figures (relay-ledger.ts); false (and nothing kept) when they are not. */
  async storage(input: unknown): Promise<boolean> {
    const parsed = storageReportSchema.safeParse(input);
    if (!parsed.success) return false;
    this.schema.ensure();
    const now = Date.now();
    this.ctx.storage.transactionSync(() => {
      for (const kind of STORAGE_KINDS) {
        const k = parsed.data[kind];
        this.sql.exec(
          `INSERT INTO storage (kind, reserved_bytes, holders, total_bytes, updated_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (kind) DO UPDATE SET reserved_bytes = excluded.reserved_bytes, holders = excluded.holders,
             total_bytes = excluded.total_bytes, updated_at = excluded.updated_at`,
          kind,
          k.reserved_bytes,
          k.holders,
          k.total_bytes,
          now,
        );
      }
    });
    return true;
  }

  /** Per kind, what the ledger last reported; before any report, nothing reserved of the totals in force. */
  private storageFigures(): StorageReport {
    const out = emptyStorage(this.settings.storage);
    if (!this.schema.exists) return out;
    for (const r of this.sql.exec<StorageRow>("SELECT kind, reserved_bytes, holders, total_bytes FROM storage").toArray()) {
      if ((STORAGE_KINDS as readonly string[]).includes(r.kind))
        out[r.kind as keyof StorageReport] = { reserved_bytes: r.reserved_bytes, holders: r.holders, total_bytes: r.total_bytes };
    }
    return out;
  }

  /** RPC: the counts for the status page. */
  async snapshot(): Promise<StatsSnapshot> {
    if (!this.schema.exists) return buildSnapshot([], [], Date.now(), this.storageFigures());
    const gauges = this.sql
      .exec<GaugeRow & Record<string, SqlStorageValue>>(
        `SELECT protocol, SUM(connections) AS connections, SUM(envelopes_stored) AS envelopes_stored,
                SUM(rooms_open) AS rooms_open, SUM(mailbox_items) AS mailbox_items
           FROM reporters GROUP BY protocol`,
      )
      .toArray();
    const minutes = this.sql.exec<MinuteRow & Record<string, SqlStorageValue>>("SELECT minute, protocol, metric, n FROM minutes").toArray();
    const totals = this.sql.exec<TotalRow & Record<string, SqlStorageValue>>("SELECT protocol, metric, n FROM totals").toArray();
    // This object's own usage up to now goes in first, so the snapshot counts it too.
    const own = this.objectUsage.take();
    this.ctx.storage.transactionSync(() => this.addUsage(this.objectUsage.className, own));
    const usage = this.sql
      .exec<UsageRow & Record<string, SqlStorageValue>>(
        "SELECT class, key AS metric, value AS n FROM usage_by_class, json_each(usage_by_class.n)",
      )
      .toArray();
    return buildSnapshot(gauges, minutes, Date.now(), this.storageFigures(), totals, usage);
  }
}
