// Counters the Worker keeps in its isolate's memory for GET /metrics: HTTP requests by route and
// status class, their latency, auth failures, admin actions. They start at zero when the isolate
// starts (process_start_time_seconds says when), which Prometheus' rate() takes as a counter reset.
//
// Self-hosted, the Worker and every object run in one workerd isolate: these count every request
// the relay answered since it started. On Cloudflare, each isolate (many, on many machines) keeps
// its own, and /metrics answers from whichever isolate took the scrape: a sample, not the relay's
// whole traffic (Workers Analytics has that). The socket and message counters come from the stats
// object instead (server/stats.ts totals) and are relay-wide on both.

/** Upper bounds (milliseconds) of the request-latency histogram's buckets. */
const LATENCY_BUCKETS_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000] as const;

/** When the isolate started counting: its first request (workerd's clock reads 0 outside a request). */
let startedAtMs = 0;
function started(): number {
  if (startedAtMs === 0) startedAtMs = Date.now();
  return startedAtMs;
}

const requests = new Map<string, number>();
const authFailures = new Map<string, number>();
const adminActions = new Map<string, number>();
const latency = { buckets: LATENCY_BUCKETS_MS.map(() => 0), sum_ms: 0, count: 0 };

function bump(m: Map<string, number>, key: string, by = 1): void {
  m.set(key, (m.get(key) ?? 0) + by);
}

/** "2xx" for 200..299 and so on. */
function statusClass(status: number): string {
  return `${Math.floor(status / 100)}xx`;
}

/** One answered request: its route pattern (never the path), its status, how long it took. */
export function countRequest(route: string, status: number, ms: number): void {
  started();
  bump(requests, `${route}\u0000${statusClass(status)}`);
  latency.count++;
  latency.sum_ms += ms;
  LATENCY_BUCKETS_MS.forEach((le, i) => {
    if (ms <= le) latency.buckets[i]++;
  });
}

export function countAuthFailure(route: string): void {
  bump(authFailures, route);
}

/** One admin API call: its method and whether it succeeded ("ok") or was refused ("error"). */
export function countAdminAction(method: string, outcome: "ok" | "error"): void {
  bump(adminActions, `${method}\u0000${outcome}`);
}

export interface CounterValues {
  startedAtMs: number;
  requests: Array<{ route: string; class: string; n: number }>;
  authFailures: Array<{ route: string; n: number }>;
  adminActions: Array<{ method: string; outcome: string; n: number }>;
  latency: { bucketsMs: readonly number[]; cumulative: number[]; sumMs: number; count: number };
}

export function counterValues(): CounterValues {
  const split = (k: string) => k.split("\u0000");
  return {
    startedAtMs: started(),
    requests: [...requests].map(([k, n]) => ({ route: split(k)[0], class: split(k)[1], n })),
    authFailures: [...authFailures].map(([route, n]) => ({ route, n })),
    adminActions: [...adminActions].map(([k, n]) => ({ method: split(k)[0], outcome: split(k)[1], n })),
    latency: { bucketsMs: LATENCY_BUCKETS_MS, cumulative: [...latency.buckets], sumMs: latency.sum_ms, count: latency.count },
  };
}
