// GET /metrics: Prometheus text (exposition format 0.0.4).
// - Counters (`_total`), which rate() works on: HTTP requests by route and status class, auth
//   failures, admin actions (the Worker's isolate, server/counters.ts); sockets opened and closed,
//   messages, deliveries and socket errors (relay-wide, from the stats object's totals); entries
//   into the objects by class and cause, and the SQLite rows they read and wrote.
// - A request-latency histogram, build info and the start time (uptime = time() - start).
// - The gauges of the status page: current values, and each counter's count in the last complete
//   minute and over the stats window.
import { STATS_COUNTERS, STATS_PROTOCOLS, WAKE_CAUSES, type StatsSnapshot } from "./stats";
import { STORAGE_KINDS } from "../shared/storage";
import type { CounterValues } from "./counters";

export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
const PREFIX = "edge_relay_";

interface BuildInfo {
  version: string;
  /** The commit the bundle was built from (server/info.ts COMMIT). */
  commit: string;
  /** "workerd" self-hosted, "cloudflare" on Cloudflare. */
  runtime: string;
}

type Rows = Array<[Record<string, string>, number]>;

export function renderMetrics(s: StatsSnapshot, counters?: CounterValues, build?: BuildInfo): string {
  const out: string[] = [];
  const series = (type: "gauge" | "counter", name: string, help: string, rows: Rows, prefix = PREFIX) => {
    out.push(`# HELP ${prefix}${name} ${help}`, `# TYPE ${prefix}${name} ${type}`);
    for (const [labels, v] of rows) out.push(`${prefix}${name}${labelText(labels)} ${v}`);
  };
  const gauge = (name: string, help: string, rows: Rows) => series("gauge", name, help, rows);
  const counter = (name: string, help: string, rows: Rows) => series("counter", name, help, rows);
  gauge(
    "connections",
    "Open client WebSockets.",
    STATS_PROTOCOLS.map((p) => [{ protocol: p }, s.connections[p]]),
  );
  gauge("envelopes_stored", "Tally envelopes waiting for an offline device.", [[{}, s.envelopes_stored]]);
  gauge(
    "rooms_open",
    "Rooms with at least one socket.",
    (["passnote", "minca"] as const).map((p) => [{ protocol: p }, s.rooms_open[p]]),
  );
  gauge("mailbox_items", "Minca mailbox items held.", [[{}, s.mailbox_items]]);
  gauge(
    "storage_reserved_bytes",
    "Bytes leased from the relay-wide total, per stored kind.",
    STORAGE_KINDS.map((k) => [{ kind: k }, s.storage[k].reserved_bytes]),
  );
  gauge(
    "storage_total_bytes",
    "The relay-wide total in force, per stored kind.",
    STORAGE_KINDS.map((k) => [{ kind: k }, s.storage[k].total_bytes]),
  );
  // The newest minute is still filling: the last complete one is the one before it.
  const lastComplete = s.window_minutes - 2;
  for (const c of STATS_COUNTERS) {
    const perMinute = s.per_minute[c].by_protocol;
    gauge(
      `${c}_last_minute`,
      `${c} in the last complete minute.`,
      STATS_PROTOCOLS.map((p) => [{ protocol: p }, perMinute[p][lastComplete] ?? 0]),
    );
    gauge(
      `${c}_window`,
      `${c} over the last ${s.window_minutes} minutes.`,
      STATS_PROTOCOLS.map((p) => [{ protocol: p }, sum(perMinute[p])]),
    );
  }

  // Relay-wide counters from the stats object (each object's counts reach it within its flush interval).
  const t = s.totals;
  counter(
    "sockets_opened_total",
    "Client WebSockets accepted.",
    STATS_PROTOCOLS.map((p) => [{ protocol: p }, t.connections_opened[p]]),
  );
  counter(
    "sockets_closed_total",
    "Client WebSockets closed (accepted minus open now).",
    STATS_PROTOCOLS.map((p) => [{ protocol: p }, Math.max(0, t.connections_opened[p] - s.connections[p])]),
  );
  counter(
    "messages_total",
    "Frames received from clients.",
    STATS_PROTOCOLS.map((p) => [{ protocol: p }, t.messages[p]]),
  );
  counter(
    "deliveries_total",
    "Frames delivered to clients.",
    STATS_PROTOCOLS.map((p) => [{ protocol: p }, t.deliveries[p]]),
  );
  counter(
    "socket_errors_total",
    "Error frames sent to clients.",
    STATS_PROTOCOLS.map((p) => [{ protocol: p }, t.errors[p]]),
  );

  // What the objects cost to run (durable-objects/base/object-usage.ts), per class: entries by
  // cause (each a billed request on Cloudflare) and SQLite rows. An idle relay adds to none of them.
  const classes = Object.keys(s.usage).sort();
  counter(
    "object_wakes_total",
    "Entries into Durable Objects by class and cause (alarm, rpc, fetch, socket_message); a ping the runtime answers is none.",
    classes.flatMap((c) => WAKE_CAUSES.map((cause): [Record<string, string>, number] => [{ class: c, cause }, s.usage[c][cause] ?? 0])),
  );
  counter(
    "sqlite_rows_read_total",
    "SQLite rows read by the objects' queries (the cursors' rowsRead), by class.",
    classes.map((c) => [{ class: c }, s.usage[c].rows_read ?? 0]),
  );
  counter(
    "sqlite_rows_written_total",
    "SQLite rows written by the objects' queries (the cursors' rowsWritten), by class.",
    classes.map((c) => [{ class: c }, s.usage[c].rows_written ?? 0]),
  );

  if (counters) {
    counter(
      "http_requests_total",
      "HTTP requests answered, by route pattern and status class (this isolate).",
      counters.requests.map((r) => [{ route: r.route, code: r.class }, r.n]),
    );
    counter(
      "auth_failures_total",
      "HTTP requests refused for want of valid credentials (this isolate).",
      counters.authFailures.map((r) => [{ route: r.route }, r.n]),
    );
    counter(
      "admin_actions_total",
      "Admin API calls, by method and outcome (this isolate).",
      counters.adminActions.map((r) => [{ method: r.method, outcome: r.outcome }, r.n]),
    );
    const h = counters.latency;
    const name = `${PREFIX}http_request_duration_seconds`;
    out.push(`# HELP ${name} Time from a request's arrival to its answer (this isolate).`, `# TYPE ${name} histogram`);
    for (const [i, le] of h.bucketsMs.entries()) out.push(`${name}_bucket{le="${le / 1000}"} ${h.cumulative[i]}`);
    out.push(`${name}_bucket{le="+Inf"} ${h.count}`, `${name}_sum ${h.sumMs / 1000}`, `${name}_count ${h.count}`);
    series(
      "gauge",
      "process_start_time_seconds",
      "When this isolate started, in seconds since the epoch.",
      [[{}, Math.floor(counters.startedAtMs / 1000)]],
      "",
    );
  }
  if (build)
    gauge("build_info", "The relay's version, commit and runtime; always 1.", [
      [{ version: build.version, commit: build.commit, runtime: build.runtime }, 1],
    ]);
  return out.join("\n") + "\n";
}

function labelText(labels: Record<string, string>): string {
  const e = Object.entries(labels);
  if (!e.length) return "";
  return `{${e.map(([k, v]) => `${k}="${v.replace(/[\\"\n]/g, (ch) => (ch === "\n" ? "\\n" : `\\${ch}`))}"`).join(",")}}`;
}

function sum(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}
