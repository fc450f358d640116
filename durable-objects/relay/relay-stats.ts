// The operator's counters (docs/browser.md, "The status page"): one RelayStats object per relay,
// which the StatsReporter every other object keeps (base/stats-reporter.ts) reports to. No
// message ever waits on the stats object: a reporter adds to counts in memory and sends one
// report (its per-minute counts and its current values, computed then) by RPC from its deferred
// work, off the message path. A failed report keeps its counts for the next one.
// Reports are not written one by one (each would write a row per class, total, minute and
// reporter): `report()` checks one and merges it into a batch in memory (stats-batch.ts), and the
// batch is written in one transaction by this object's deferred work, from its alarm a flush
// interval after the first report of a burst; `snapshot()` writes it first, so the status page
// and /metrics count every report answered true, and past STATS_LIMITS.max_pending_keys it is
// written at once. What is lost if the object's process dies before its alarm: the reports merged
// since the last write, at most a flush interval of statistics (never anything that protects
// anyone: no bound, quota or delivery reads them).
import { StoredObject } from "../base/stored-object";
import { MIGRATIONS } from "../../migrations/index";
import { STORAGE_KINDS } from "../../shared/storage";
import { StatsBatch } from "./stats-batch";
import { log } from "../../server/log";
import {
  buildSnapshot,
  emptyStorage,
  storageReportSchema,
  type StorageReport,
  parseStatsReport,
  type GaugeRow,
  type MinuteRow,
  type StatsSnapshot,
  type TotalRow,
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

  /** Reports answered true and not yet written (stats-batch.ts). */
  private readonly batch = new StatsBatch();
  /** The batch's write, from the object's alarm a flush interval after the first report of a burst. */
  private readonly writeLater = this.deferred.part(() => this.writeBatch());

  /** RPC: one object's report; false (and nothing kept) when it is not a report of counts. Merged in memory, written by the alarm. */
  async report(input: unknown): Promise<boolean> {
    const r = parseStatsReport(input); // statsReportSchema's rule, without zod's cost (server/stats.ts)
    if (r === null) return false;
    this.schema.ensure(); // storage held: the object may set its alarm
    this.batch.add(r, Date.now());
    if (this.batch.full) {
      try {
        this.writeBatch();
        return true;
      } catch (err) {
        log.warn("stats: writing a full batch failed; the alarm writes it", { err });
      }
    }
    this.writeLater.later();
    return true;
  }

  /** Writes the reports merged so far, with this object's own usage (kept here: a report to itself would wake it), in one transaction. */
  private writeBatch(): void {
    if (this.batch.size === 0 || !this.schema.exists) return;
    this.batch.addUsage(this.objectUsage.className, this.objectUsage.take());
    this.batch.write(this.ctx.storage, Date.now());
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
    // What is merged and not yet written goes in first (with this object's own usage up to now),
    // so the snapshot counts every report answered true.
    this.batch.addUsage(this.objectUsage.className, this.objectUsage.take());
    this.writeBatch();
    const gauges = this.sql
      .exec<GaugeRow & Record<string, SqlStorageValue>>(
        `SELECT protocol, SUM(connections) AS connections, SUM(envelopes_stored) AS envelopes_stored,
                SUM(rooms_open) AS rooms_open, SUM(mailbox_items) AS mailbox_items
           FROM reporters GROUP BY protocol`,
      )
      .toArray();
    const minutes = this.sql.exec<MinuteRow & Record<string, SqlStorageValue>>("SELECT minute, protocol, metric, n FROM minutes").toArray();
    const totals = this.sql.exec<TotalRow & Record<string, SqlStorageValue>>("SELECT protocol, metric, n FROM totals").toArray();
    const usage = this.sql
      .exec<UsageRow & Record<string, SqlStorageValue>>(
        "SELECT class, key AS metric, value AS n FROM usage_by_class, json_each(usage_by_class.n)",
      )
      .toArray();
    return buildSnapshot(gauges, minutes, Date.now(), this.storageFigures(), totals, usage);
  }
}
