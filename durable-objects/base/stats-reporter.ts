// What every object keeps for the stats object (relay/relay-stats.ts): counts in memory, and at
// most every STATS_LIMITS.flush_interval_ms one report by RPC, off the message path: from the
// object's alarm after a burst, or at the end of an entry for an object that holds nothing
// (deferred.ts; no timer keeps the object up for it).
// Every object reports its usage (object-usage.ts: entries by cause, SQLite rows) with it; an
// object without a protocol (the relay-wide objects, hosting) reports its usage only.
import { sha256 } from "@noble/hashes/sha2.js";
import { STATS_LIMITS } from "../../shared/limits";
import { bytesToHex, utf8Encode } from "../../shared/encoding";
import { minuteOf, type StatsCounter, type StatsGauges, type StatsProtocol, type Usage } from "../../server/stats";
import { log } from "../../server/log";
import type { Deferred, DeferredPart } from "./deferred";
import { relayStats } from "../../server/relay-objects";

/** What a reporter calls on the stats object. */
interface StatsSink extends Rpc.DurableObjectBranded {
  report(input: unknown): Promise<boolean>;
}

interface StatsEnv {
  RELAY_STATS?: DurableObjectNamespace<StatsSink>;
}

/** The stats object, reached the one way (server/objects.ts). */
const statsOf = (ns: DurableObjectNamespace<StatsSink>) => relayStats({ RELAY_STATS: ns } as unknown as Pick<Env, "RELAY_STATS">);

/**
 * What an object keeps for the stats object: counts in memory, sent at most every flush
 * interval together with the object's current values (`gauges`, read at send time) and its usage.
 * Without a RELAY_STATS binding it sends nothing; without a protocol, its usage only.
 */
export class StatsReporter {
  private readonly pending = new Map<string, number>();
  private readonly later: DeferredPart;
  private reporter: string | undefined;
  /** The current values the last report carried (JSON), or null before the first. */
  private sentGauges: string | null = null;

  constructor(
    private readonly ctx: DurableObjectState,
    env: object,
    private readonly protocol: StatsProtocol | undefined,
    private readonly gauges: () => StatsGauges,
    deferred: Deferred,
    /** The object's usage since its last report (object-usage.ts), or none (the stats object keeps its own). */
    private readonly usage?: { className: string; take(): Usage; giveBack(u: Usage): void },
  ) {
    this.ns = protocol || usage ? (env as StatsEnv).RELAY_STATS : undefined;
    this.later = deferred.part(() => this.flush(), { last: true });
  }

  private readonly ns: DurableObjectNamespace<StatsSink> | undefined;

  /**
   * The current minute's counts, added to `pending` when the minute turns or a report is sent.
   * Counting is on every message's path: a number added to a field, no key built per call.
   */
  private minute = -1;
  private current: Partial<Record<StatsCounter, number>> = {};

  /** Counts `n` events of `metric` in the current minute. */
  count(metric: StatsCounter, n = 1): void {
    if (n <= 0 || !this.ns || !this.protocol) return;
    const minute = minuteOf(Date.now());
    if (minute !== this.minute) {
      this.settle();
      this.minute = minute;
    }
    this.current[metric] = (this.current[metric] ?? 0) + n;
    if (!this.later.pending) this.changed();
  }

  /** Moves the current minute's counts into `pending`. */
  private settle(): void {
    for (const [metric, n] of Object.entries(this.current)) {
      const key = `${this.minute}:${metric}`;
      this.pending.set(key, (this.pending.get(key) ?? 0) + n);
    }
    this.current = {};
  }

  /** The object's current values changed (a socket closed, an item expired): report them. */
  changed(): void {
    if (this.ns) this.later.later();
  }

  /**
   * Whether the object's current values differ from what its last report carried (a device
   * connected or gone): an object that holds nothing reports that at the end of the entry, not a
   * flush interval later (deferred.ts `urgent`). False without a protocol (no values are sent).
   */
  gaugesChanged(): boolean {
    if (!this.ns || !this.protocol) return false;
    try {
      return JSON.stringify(this.gauges()) !== this.sentGauges;
    } catch {
      return false; // an object that just deleted its storage holds nothing
    }
  }

  /** Sends what is pending now (the deferred work calls it; tests may too). */
  async flush(): Promise<void> {
    const ns = this.ns;
    if (!ns) return;
    const usage = this.usage?.take() ?? {};
    const used = Object.keys(usage).length > 0;
    if (!this.protocol) {
      if (!used) return;
      try {
        this.reporter ??= this.reporterKey();
        await statsOf(ns).report({ reporter: this.reporter, usage: { class: this.usage!.className, n: usage }, gauges: {}, counts: [] });
      } catch (err) {
        this.usage?.giveBack(usage);
        log.warn("stats: usage report failed; kept for the next one", { err });
      }
      return;
    }
    this.settle();
    const oldest = minuteOf(Date.now()) - STATS_LIMITS.window_minutes + 1;
    const counts: Array<{ minute: number; metric: StatsCounter; n: number }> = [];
    for (const [key, n] of this.pending) {
      const [minute, metric] = key.split(":");
      if (Number(minute) >= oldest) counts.push({ minute: Number(minute), metric: metric as StatsCounter, n });
    }
    this.pending.clear();
    let gauges: StatsGauges;
    try {
      gauges = this.gauges();
    } catch {
      gauges = {}; // an object that just deleted its storage holds nothing
    }
    try {
      this.reporter ??= this.reporterKey();
      this.sentGauges = JSON.stringify(gauges);
      await statsOf(ns).report({
        reporter: this.reporter,
        protocol: this.protocol,
        ...(used ? { usage: { class: this.usage!.className, n: usage } } : {}),
        gauges,
        counts,
      });
    } catch (err) {
      // Keep the counts for the next report, and its values as not sent.
      this.sentGauges = null;
      if (used) this.usage?.giveBack(usage);
      for (const c of counts) this.pending.set(`${c.minute}:${c.metric}`, (this.pending.get(`${c.minute}:${c.metric}`) ?? 0) + c.n);
      // Sent with the next report (no retry of its own: a stats object down must not wake every object on a period).
      log.warn("stats: report failed; kept for the next one", { err });
    }
  }

  private reporterKey(): string {
    return bytesToHex(sha256(utf8Encode(`stats:${this.ctx.id.toString()}`))).slice(0, 32);
  }
}
