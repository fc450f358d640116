// What a load costs on Cloudflare, estimated from what the relay counts (/metrics: object wakes by
// cause, SQLite rows) at Cloudflare's published prices. The prices are constants here, in one
// place; BENCHMARKS.md cites them with the date they were read.

/**
 * Workers Paid prices as read from Cloudflare's published pricing, as known on 2026-12-07 (USD).
 * Included monthly allowances are left out: the estimates are marginal costs.
 */
export const CLOUDFLARE_PRICES = {
  read_on: "2026-12-07",
  /** Durable Object requests (RPC calls, fetches, alarms; incoming WebSocket messages at 20:1), per million. */
  do_requests_per_million: 0.15,
  /** Incoming WebSocket messages billed as one request each this many. */
  websocket_messages_per_request: 20,
  /**
   * Durable Object duration, per million GB-s (128 MB per object while active). Source: Cloudflare's
   * Durable Objects pricing page (developers.cloudflare.com/durable-objects/platform/pricing/):
   * wall-clock time while an object runs an event or sits in memory unable to hibernate (a pending
   * timer keeps it from hibernating); an idle object able to hibernate is not billed.
   */
  do_duration_per_million_gb_s: 12.5,
  do_memory_gb: 0.128,
  /** SQLite storage rows read and written, per million. */
  sqlite_rows_read_per_million: 0.001,
  sqlite_rows_written_per_million: 1.0,
  /** Worker requests, per million. */
  worker_requests_per_million: 0.3,
} as const;

/** What one load used, as Cloudflare bills it. */
export interface Usage {
  /** Durable Object entries other than socket messages (RPC, fetch, alarm). */
  doRequests: number;
  /** Incoming WebSocket messages the objects handled (auto-answered pings are none). */
  socketMessages: number;
  rowsRead: number;
  rowsWritten: number;
  /** Seconds objects were active (not hibernated), summed over objects. */
  activeSeconds: number;
  workerRequests: number;
}

/** The estimated bill of `u`, in USD. */
export function costOf(u: Usage, p = CLOUDFLARE_PRICES): number {
  const requests = u.doRequests + u.socketMessages / p.websocket_messages_per_request;
  return (
    (requests * p.do_requests_per_million +
      u.activeSeconds * p.do_memory_gb * p.do_duration_per_million_gb_s +
      u.rowsRead * p.sqlite_rows_read_per_million +
      u.rowsWritten * p.sqlite_rows_written_per_million +
      u.workerRequests * p.worker_requests_per_million) /
    1e6
  );
}

/** Seconds in a 30-day month. */
export const MONTH_SECONDS = 30 * 24 * 3600;

/**
 * The monthly bill of 1,000 idle devices from their wakes per device per hour: each wake a request
 * that keeps its object active for the runtime's 10 s, reading `rowsPerWake` rows. Pings answered by
 * the runtime (auto-response) are neither requests nor duration.
 */
export function idleMonthlyCostPer1000(wakesPerDeviceHour: number, rowsPerWake = 0, activeSecondsPerWake = 10): number {
  const wakes = wakesPerDeviceHour * 1000 * (MONTH_SECONDS / 3600);
  return costOf({
    doRequests: wakes,
    socketMessages: 0,
    rowsRead: wakes * rowsPerWake,
    rowsWritten: 0,
    activeSeconds: wakes * activeSecondsPerWake,
    workerRequests: 0,
  });
}

/**
 * Seconds of active duration one envelope costs when envelopes are sparse (each a burst of its own,
 * as a person writes): each of the `objects` it enters is active for `handlerSeconds`, then for
 * `tailSeconds` more while a timer of its own keeps it from hibernating.
 */
export function sparseActiveSeconds(objects: number, handlerSeconds: number, tailSeconds: number): number {
  return objects * (handlerSeconds + tailSeconds);
}
