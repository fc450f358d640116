// The stats object's reports, merged in memory and written together (relay-stats.ts): rows
// written are what a Durable Object's storage is billed by, and every object reports after each
// of its bursts, so a row per report and key was a third of what a load of fresh Tally pairs wrote.
// Merged here: usage summed per class, totals per (protocol, metric), per-minute counts per
// (minute, protocol, metric), and each reporter's latest current values (or its leaving, when
// they are all zero). One write, in one transaction, then holds each key once, however many
// reports the batch merged: each class's usage row, each total, each minute row and each reporter
// row whose values changed (an unchanged one writes nothing).
// What is held is bounded: past STATS_LIMITS.max_pending_keys distinct keys the batch is written
// at once (`full`). What a crash loses is what was merged since the last write (at most a flush
// interval of statistics, never anything that protects anyone).
import { STATS_LIMITS } from "../../shared/limits";
import { minuteOf, type StatsReport, type Usage } from "../../server/stats";

/** A reporter's current values, in the `reporters` table's column order; null: it left (all zero). */
type ReporterValues = { protocol: string; values: [number, number, number, number]; at: number } | null;

export class StatsBatch {
  private readonly usage = new Map<string, Usage>();
  private readonly totals = new Map<string, { protocol: string; metric: string; n: number }>();
  private readonly minutes = new Map<string, { minute: number; protocol: string; metric: string; n: number }>();
  private readonly reporters = new Map<string, ReporterValues>();
  /** Every per-minute row older than this minute has been deleted (by this instance). */
  private prunedBefore = Number.NEGATIVE_INFINITY;

  /** Distinct keys held (classes, totals, minutes, reporters). */
  get size(): number {
    return this.usage.size + this.totals.size + this.minutes.size + this.reporters.size;
  }

  /** Whether the batch holds as many keys as it may: it is written at once. */
  get full(): boolean {
    return this.size >= STATS_LIMITS.max_pending_keys;
  }

  /** Merges one report (already checked), received at `now`. */
  add(r: StatsReport, now: number): void {
    if (r.usage) this.addUsage(r.usage.class, r.usage.n);
    if (r.protocol === undefined) return; // an object that reports its usage only
    const protocol = r.protocol;
    const g = r.gauges;
    const values: [number, number, number, number] = [g.connections ?? 0, g.envelopes_stored ?? 0, g.rooms_open ?? 0, g.mailbox_items ?? 0];
    this.reporters.set(r.reporter, values.every((v) => v === 0) ? null : { protocol, values, at: now });
    const oldest = oldestMinute(now);
    for (const c of r.counts) {
      if (c.n === 0) continue;
      const t = `${protocol}:${c.metric}`;
      const total = this.totals.get(t);
      if (total) total.n += c.n;
      else this.totals.set(t, { protocol, metric: c.metric, n: c.n });
      if (c.minute < oldest) continue;
      const m = `${c.minute}:${t}`;
      const minute = this.minutes.get(m);
      if (minute) minute.n += c.n;
      else this.minutes.set(m, { minute: c.minute, protocol, metric: c.metric, n: c.n });
    }
  }

  /** Adds `usage` to the class's sum in the batch. */
  addUsage(cls: string, usage: Usage): void {
    let sum = this.usage.get(cls);
    for (const [metric, n] of Object.entries(usage) as Array<[keyof Usage, number]>) {
      if (!(n > 0)) continue;
      if (!sum) {
        sum = {};
        this.usage.set(cls, sum);
      }
      sum[metric] = (sum[metric] ?? 0) + n;
    }
  }

  /**
   * Writes the batch in one transaction at `now` and empties it (kept whole if the write
   * throws: the transaction is rolled back and the next write carries it). Minute rows that left
   * the window meanwhile are not written, and rows older than the window are deleted once per
   * minute of the window's move.
   */
  write(storage: DurableObjectStorage, now: number): void {
    const sql = storage.sql;
    const oldest = oldestMinute(now);
    storage.transactionSync(() => {
      for (const [cls, add] of this.usage) {
        const row = sql.exec<{ n: string }>("SELECT n FROM usage_by_class WHERE class = ?", cls).toArray()[0];
        const sum = row ? (JSON.parse(row.n) as Usage) : {};
        for (const [metric, n] of Object.entries(add) as Array<[keyof Usage, number]>) sum[metric] = (sum[metric] ?? 0) + n;
        sql.exec(
          "INSERT INTO usage_by_class (class, n) VALUES (?, ?) ON CONFLICT (class) DO UPDATE SET n = excluded.n",
          cls,
          JSON.stringify(sum),
        );
      }
      for (const [reporter, r] of this.reporters) {
        if (r === null) {
          sql.exec("DELETE FROM reporters WHERE reporter = ?", reporter);
          continue;
        }
        // A reporter whose values did not change writes nothing (its row's updated_at is when they last did).
        sql.exec(
          `INSERT INTO reporters (reporter, protocol, connections, envelopes_stored, rooms_open, mailbox_items, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (reporter) DO UPDATE SET protocol = excluded.protocol, connections = excluded.connections,
             envelopes_stored = excluded.envelopes_stored, rooms_open = excluded.rooms_open,
             mailbox_items = excluded.mailbox_items, updated_at = excluded.updated_at
           WHERE (protocol, connections, envelopes_stored, rooms_open, mailbox_items) IS NOT
                 (excluded.protocol, excluded.connections, excluded.envelopes_stored, excluded.rooms_open, excluded.mailbox_items)`,
          reporter,
          r.protocol,
          ...r.values,
          r.at,
        );
      }
      for (const t of this.totals.values())
        sql.exec(
          "INSERT INTO totals (protocol, metric, n) VALUES (?, ?, ?) ON CONFLICT (protocol, metric) DO UPDATE SET n = n + excluded.n",
          t.protocol,
          t.metric,
          t.n,
        );
      for (const m of this.minutes.values()) {
        if (m.minute < oldest) continue;
        sql.exec(
          `INSERT INTO minutes (minute, protocol, metric, n) VALUES (?, ?, ?, ?)
           ON CONFLICT (minute, protocol, metric) DO UPDATE SET n = n + excluded.n`,
          m.minute,
          m.protocol,
          m.metric,
          m.n,
        );
      }
      // Rows older than the window go when the window moves (no row older than `oldest` is added
      // above), not on every write: once per minute per instance.
      if (oldest > this.prunedBefore) sql.exec("DELETE FROM minutes WHERE minute < ?", oldest);
    });
    this.prunedBefore = Math.max(this.prunedBefore, oldest);
    this.usage.clear();
    this.totals.clear();
    this.minutes.clear();
    this.reporters.clear();
  }
}

/** The oldest minute of the window at `now`. */
function oldestMinute(now: number): number {
  return minuteOf(now) - STATS_LIMITS.window_minutes + 1;
}
