// What a bench load would cost on Cloudflare (bench/cloudflare-cost.ts has the prices), for the
// relay and for (a), both measured: the relay's own counters from its /metrics (object entries by
// cause, SQLite rows, Worker requests; durable-objects/base/object-usage.ts) and (a)'s from its
// GET /usage (bench/baselines/bare-do.ts counts the same things the same way). (b) runs nowhere
// near Cloudflare and is not costed.
//
// Active duration (GB-s) is estimated, not counted: Cloudflare bills an object's wall time while it
// runs an event or is idle in memory without being able to hibernate (a pending timer prevents it).
// During a bench load every object the load uses is busy from its start to its end, so each is
// active for the load's wall time; after it, (a)'s objects and the relay's can hibernate at once:
// the relay's deferred work (the stats report, the sender's share, the lease's give-back) runs
// from each object's alarm a flush interval later (durable-objects/base/deferred.ts), a request
// counted with the others (cause alarm) and RELAY_ALARM_SECONDS of duration; the relay's stats
// object is counted as one more object active for the load. Rows the stats object writes for the
// reports are the relay's cost too and are counted (its entries and rows read are not: reading
// /metrics itself enters it).
import { STATS_LIMITS } from "../shared/limits";
import type { Server } from "./baselines/start";
import { costOf, CLOUDFLARE_PRICES, type Usage } from "./cloudflare-cost";
import { record, type Target } from "./figures";

/**
 * Active duration of one object's alarm after a burst (its deferred work: a report by RPC, a
 * write), seconds: an assumption of the same order as an event's handler. Before the alarm the
 * relay kept a timer instead, STATS_LIMITS.flush_interval_ms of active duration per object.
 */
export const RELAY_ALARM_SECONDS = 0.01;
/** What each object's timer cost before deferred work moved to the alarm (for the comparison in BENCHMARKS.md), seconds. */
export const RELAY_TIMER_SECONDS_BEFORE = STATS_LIMITS.flush_interval_ms / 1000;

/**
 * The relay's billable usage so far, from its /metrics: object entries by cause and SQLite rows
 * (every class but the stats object's, which reading /metrics itself enters; the rows it writes
 * are counted apart, statsRowsWritten), Worker requests.
 */
async function relayUsage(url: string): Promise<Usage> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const u: Usage = { doRequests: 0, socketMessages: 0, rowsRead: 0, rowsWritten: 0, activeSeconds: 0, workerRequests: 0 };
  for (const line of text.split("\n")) {
    let m = /^edge_relay_object_wakes_total\{class="([^"]+)",cause="([^"]+)"\} (\d+)$/.exec(line);
    if (m && m[1] !== "RelayStats") {
      if (m[2] === "socket_message") u.socketMessages += Number(m[3]);
      else u.doRequests += Number(m[3]);
    }
    m = /^edge_relay_sqlite_rows_(read|written)_total\{class="([^"]+)"\} (\d+)$/.exec(line);
    if (m && m[2] !== "RelayStats") {
      if (m[1] === "read") u.rowsRead += Number(m[3]);
      else u.rowsWritten += Number(m[3]);
    }
    m = /^edge_relay_http_requests_total\{[^}]*\} (\d+)$/.exec(line);
    if (m) u.workerRequests += Number(m[1]);
  }
  u.workerRequests -= 1; // this /metrics read
  return u;
}

/**
 * Rows the relay's stats object wrote so far (for the reports), from /metrics: shown apart in the
 * stderr line. It counts its own rows with each write of its batch of reports, before the write:
 * read after relayUsage, whose /metrics read wrote the reports still held in memory, the figure
 * counts that write too.
 */
async function statsRowsWritten(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = /^edge_relay_sqlite_rows_written_total\{class="RelayStats"\} (\d+)$/m.exec(text);
  return m ? Number(m[1]) : 0;
}

/** (a)'s usage so far, from its GET /usage (which it does not count). */
async function bareUsage(url: string): Promise<Usage> {
  const u = (await (await fetch(`${url}/usage`)).json()) as Omit<Usage, "activeSeconds">;
  return { ...u, activeSeconds: 0 };
}

/** The usage of target `t` so far; null for a target that is not costed. */
function usageOf(t: Target, url: string): Promise<Usage> | null {
  if (t === "relay") return relayUsage(url);
  if (t === "bare") return bareUsage(url);
  return null;
}

/**
 * Runs a load and, on the relay and on (a), records what it would cost on Cloudflare per million
 * `units`: requests, rows and Worker requests as counted, and with the active duration estimated
 * for the `objects` the load keeps busy (see the head of this file). Other targets: the load alone.
 */
export async function costed<T>(
  t: Target,
  s: Server,
  what: string,
  load: () => Promise<T>,
  units: (r: T) => number,
  objects: number,
): Promise<T> {
  const before = await usageOf(t, s.url);
  if (before === null) return load();
  const statsBefore = t === "relay" ? await statsRowsWritten(s.url) : 0;
  const t0 = performance.now();
  const r = await load();
  const wallSeconds = (performance.now() - t0) / 1000;
  await new Promise((res) => setTimeout(res, 2_500)); // the relay's objects' alarms send their reports within 2 s
  const after = (await usageOf(t, s.url))!;
  const statsRows = t === "relay" ? (await statsRowsWritten(s.url)) - statsBefore : 0;
  const relay = t === "relay";
  const d: Usage = {
    doRequests: after.doRequests - before.doRequests,
    socketMessages: after.socketMessages - before.socketMessages,
    rowsRead: after.rowsRead - before.rowsRead,
    rowsWritten: after.rowsWritten - before.rowsWritten + statsRows,
    activeSeconds: relay ? (objects + 1) * wallSeconds + objects * RELAY_ALARM_SECONDS : objects * wallSeconds,
    workerRequests: after.workerRequests - before.workerRequests,
  };
  const n = Math.max(1, units(r));
  const perMillion = (u: Usage) => (costOf(u) / n) * 1e6;
  record(
    `cloudflare estimate: USD per million ${what} (requests, rows, Worker requests; no duration)`,
    "USD",
    false,
    t,
    perMillion({ ...d, activeSeconds: 0 }),
  );
  record(
    `cloudflare estimate: USD per million ${what}, active duration alone (estimated)`,
    "USD",
    false,
    t,
    perMillion({ ...zero, activeSeconds: d.activeSeconds }),
  );
  const gbs = (d.activeSeconds * CLOUDFLARE_PRICES.do_memory_gb) / n;
  process.stderr.write(
    `  ${t}: ${what}: per unit ${(d.doRequests / n).toFixed(2)} DO requests, ${(d.socketMessages / n).toFixed(2)} socket messages, ${(d.rowsRead / n).toFixed(1)} rows read, ${(d.rowsWritten / n).toFixed(2)} rows written (${(statsRows / n).toFixed(2)} by the stats object), ${(d.workerRequests / n).toFixed(3)} Worker requests, ${gbs.toFixed(4)} GB-s (${objects} objects, ${wallSeconds.toFixed(1)} s)\n`,
  );
  return r;
}

const zero: Usage = { doRequests: 0, socketMessages: 0, rowsRead: 0, rowsWritten: 0, activeSeconds: 0, workerRequests: 0 };
