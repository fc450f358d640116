// GET /metrics: the status counts (shared/stats.ts) as Prometheus text (exposition format 0.0.4).
// The relay keeps per-minute counts, not running totals, so every series is a gauge: the current
// values, and each counter's count in the last complete minute and over the whole window.
import { STATS_COUNTERS, STATS_PROTOCOLS, type StatsSnapshot } from "../shared/stats";
import { STORAGE_KINDS } from "../shared/storage";

export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
const PREFIX = "edge_relay_";

export function renderMetrics(s: StatsSnapshot): string {
  const out: string[] = [];
  const gauge = (name: string, help: string, rows: Array<[Record<string, string>, number]>) => {
    out.push(`# HELP ${PREFIX}${name} ${help}`, `# TYPE ${PREFIX}${name} gauge`);
    for (const [labels, v] of rows) out.push(`${PREFIX}${name}${labelText(labels)} ${v}`);
  };
  gauge("connections", "Open client WebSockets.", STATS_PROTOCOLS.map((p) => [{ protocol: p }, s.connections[p]]));
  gauge("envelopes_stored", "Tally envelopes waiting for an offline device.", [[{}, s.envelopes_stored]]);
  gauge("rooms_open", "Rooms with at least one socket.", (["passnote", "minca"] as const).map((p) => [{ protocol: p }, s.rooms_open[p]]));
  gauge("mailbox_items", "Minca mailbox items held.", [[{}, s.mailbox_items]]);
  gauge("storage_reserved_bytes", "Bytes leased from the relay-wide total, per stored kind.", STORAGE_KINDS.map((k) => [{ kind: k }, s.storage[k].reserved_bytes]));
  gauge("storage_total_bytes", "The relay-wide total in force, per stored kind.", STORAGE_KINDS.map((k) => [{ kind: k }, s.storage[k].total_bytes]));
  // The newest minute is still filling: the last complete one is the one before it.
  const lastComplete = s.window_minutes - 2;
  for (const c of STATS_COUNTERS) {
    const series = s.per_minute[c].by_protocol;
    gauge(`${c}_last_minute`, `${c} in the last complete minute.`, STATS_PROTOCOLS.map((p) => [{ protocol: p }, series[p][lastComplete] ?? 0]));
    gauge(`${c}_window`, `${c} over the last ${s.window_minutes} minutes.`, STATS_PROTOCOLS.map((p) => [{ protocol: p }, sum(series[p])]));
  }
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
