// The operator's counters (docs/browser.md, "The status page"): what each relay object reports to
// the one stats object, and the snapshot GET /status.json answers. Counts only: no report or
// snapshot carries a user id, topic, room id or any other name.
import * as z from "zod";
import { STATS_LIMITS } from "../shared/limits";
import { STORAGE_KINDS, type StorageKind } from "../shared/storage";

export const STATS_PROTOCOLS = ["tally", "passnote", "minca"] as const;
export type StatsProtocol = (typeof STATS_PROTOCOLS)[number];

/** Events counted per minute. */
export const STATS_COUNTERS = ["messages", "deliveries", "errors", "connections_opened"] as const;
export type StatsCounter = (typeof STATS_COUNTERS)[number];

/** What an object holds now; each report carries its current values (absolute, so a lost report only delays). */
const STATS_GAUGES = ["connections", "envelopes_stored", "rooms_open", "mailbox_items"] as const;
type StatsGauge = (typeof STATS_GAUGES)[number];
export type StatsGauges = Partial<Record<StatsGauge, number>>;

const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

/**
 * What an object was entered for (each entry a billed Durable Object request on Cloudflare): its
 * alarm, an RPC call, a fetch (a socket's upgrade), a socket message (or close) the runtime
 * handed it. A ping the runtime answers (auto-response) is none of them.
 */
export const WAKE_CAUSES = ["alarm", "rpc", "fetch", "socket_message"] as const;
export type WakeCause = (typeof WAKE_CAUSES)[number];
/** An object's usage since its last report: entries by cause, and the SQLite rows its queries read and wrote (cursor rowsRead / rowsWritten). */
const USAGE_METRICS = [...WAKE_CAUSES, "rows_read", "rows_written"] as const;
export type UsageMetric = (typeof USAGE_METRICS)[number];
export type Usage = Partial<Record<UsageMetric, number>>;
/** A Durable Object class's name, as reported with its usage. */
const CLASS_NAME = /^[A-Z][A-Za-z]{0,39}$/;

export const statsReportSchema = z.strictObject({
  /** An opaque key per reporting object (a hash of its Durable Object id), never shown. */
  reporter: z.string().regex(/^[0-9a-f]{32}$/),
  /** Absent for an object that reports its usage only (the relay-wide objects): then no gauges and no counts. */
  protocol: z.enum(STATS_PROTOCOLS).optional(),
  /** The object's class and its usage since its last report. */
  usage: z.strictObject({ class: z.string().regex(CLASS_NAME), n: z.partialRecord(z.enum(USAGE_METRICS), count) }).optional(),
  gauges: z.partialRecord(z.enum(STATS_GAUGES), count),
  counts: z
    .array(z.strictObject({ minute: z.number().int().nonnegative(), metric: z.enum(STATS_COUNTERS), n: count }))
    .max(STATS_LIMITS.window_minutes * STATS_COUNTERS.length),
});
export type StatsReport = z.infer<typeof statsReportSchema>;

const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const isPlain = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const REPORT_KEYS = new Set(["reporter", "protocol", "usage", "gauges", "counts"]);
const USAGE_KEYS = new Set(["class", "n"]);
const COUNT_KEYS = new Set(["minute", "metric", "n"]);
const MAX_REPORT_COUNTS = STATS_LIMITS.window_minutes * STATS_COUNTERS.length;

/**
 * statsReportSchema's check, written out: the stats object reads one report per object and flush
 * interval, and zod's parse of it (no compiled fast path in workerd, which forbids `new Function`)
 * was most of the stats object's CPU. The same rule: exactly these keys, nothing else at any level
 * (a report holds counts only); a test holds the two equal on arbitrary input. The report itself,
 * or null.
 */
export function parseStatsReport(input: unknown): StatsReport | null {
  if (!isPlain(input)) return null;
  for (const k of Object.keys(input)) if (!REPORT_KEYS.has(k)) return null;
  const { reporter, protocol, usage, gauges, counts } = input;
  if (typeof reporter !== "string" || !/^[0-9a-f]{32}$/.test(reporter)) return null;
  if ("protocol" in input && protocol !== undefined && !(STATS_PROTOCOLS as readonly unknown[]).includes(protocol)) return null;
  if ("usage" in input && usage !== undefined) {
    if (!isPlain(usage)) return null;
    for (const k of Object.keys(usage)) if (!USAGE_KEYS.has(k)) return null;
    if (typeof usage.class !== "string" || !CLASS_NAME.test(usage.class) || !isPlain(usage.n)) return null;
    for (const [k, v] of Object.entries(usage.n)) if (!(USAGE_METRICS as readonly string[]).includes(k) || !isCount(v)) return null;
  }
  if (!isPlain(gauges)) return null;
  for (const [k, v] of Object.entries(gauges)) if (!(STATS_GAUGES as readonly string[]).includes(k) || !isCount(v)) return null;
  if (!Array.isArray(counts) || counts.length > MAX_REPORT_COUNTS) return null;
  for (const c of counts as unknown[]) {
    if (!isPlain(c)) return null;
    for (const k of Object.keys(c)) if (!COUNT_KEYS.has(k)) return null;
    if (!isCount(c.minute) || !(STATS_COUNTERS as readonly unknown[]).includes(c.metric) || !isCount(c.n)) return null;
  }
  return input as StatsReport;
}

/** Per stored kind: the bytes leased across the relay (what its total is checked against), by how many objects, and the total in force. */
export type StorageReport = Record<StorageKind, { reserved_bytes: number; holders: number; total_bytes: number }>;

export const storageReportSchema = z.strictObject(
  Object.fromEntries(
    STORAGE_KINDS.map((k) => [k, z.strictObject({ reserved_bytes: count, holders: count, total_bytes: count })]),
  ) as Record<StorageKind, z.ZodObject<{ reserved_bytes: typeof count; holders: typeof count; total_bytes: typeof count }>>,
);

/** A storage report before the ledger sent any: nothing reserved, the totals in force. */
export function emptyStorage(totals: Record<StorageKind, number>): StorageReport {
  return Object.fromEntries(STORAGE_KINDS.map((k) => [k, { reserved_bytes: 0, holders: 0, total_bytes: totals[k] }])) as StorageReport;
}

/** Minutes since the epoch. */
export function minuteOf(ms: number): number {
  return Math.floor(ms / 60_000);
}

const byProtocol = <T extends z.ZodType>(v: T) => z.object({ tally: v, passnote: v, minca: v });
const series = z.array(count).describe("per minute over the window, oldest first");

/** What GET /status.json answers, besides `open` (statusAnswerSchema). */
const statsSnapshotSchema = z.object({
  at: z.string().describe("ISO time the snapshot was taken"),
  minute: z.number().int().describe("the newest minute of every series (minutes since the epoch); series run oldest first"),
  window_minutes: z.number().int(),
  flush_interval_ms: z.number().int().describe("longest a count waits in its object before it reaches the stats object"),
  connections: byProtocol(count),
  envelopes_stored: count,
  rooms_open: z.object({ passnote: count, minca: count }),
  mailbox_items: count,
  storage: storageReportSchema.describe(
    "per stored kind (docs/hostile.md, Relay-wide totals): bytes reserved of the relay-wide total, the objects holding them, and the total in force",
  ),
  totals: z
    .object(
      Object.fromEntries(STATS_COUNTERS.map((c) => [c, byProtocol(count)])) as Record<
        StatsCounter,
        ReturnType<typeof byProtocol<typeof count>>
      >,
    )
    .describe("each counter since the stats object was made (what /metrics exposes as _total counters)"),
  per_minute: z.object(
    Object.fromEntries(STATS_COUNTERS.map((c) => [c, z.object({ total: series, by_protocol: byProtocol(series) })])) as Record<
      StatsCounter,
      z.ZodObject<{ total: typeof series; by_protocol: ReturnType<typeof byProtocol<typeof series>> }>
    >,
  ),
  usage: z
    .record(z.string(), z.partialRecord(z.enum(USAGE_METRICS), count))
    .describe(
      "per Durable Object class since the stats object was made: entries by cause (alarm, rpc, fetch, socket_message) and SQLite rows read and written (what /metrics exposes as object_wakes_total and sqlite_rows_*_total)",
    ),
});
export type StatsSnapshot = z.infer<typeof statsSnapshotSchema>;

/** 200 to GET /status.json: the snapshot, and whether the page is open (no ADMIN_TOKEN set). */
export const statusAnswerSchema = statsSnapshotSchema.extend({ open: z.boolean() });
export type StatusAnswer = z.infer<typeof statusAnswerSchema>;

export interface GaugeRow {
  protocol: string;
  connections: number;
  envelopes_stored: number;
  rooms_open: number;
  mailbox_items: number;
}

export interface TotalRow {
  protocol: string;
  metric: string;
  n: number;
}

export interface UsageRow {
  class: string;
  metric: string;
  n: number;
}

export interface MinuteRow {
  minute: number;
  protocol: string;
  metric: string;
  n: number;
}

/** Builds the snapshot from the stats object's rows: gauge sums by protocol, and counter rows. */
export function buildSnapshot(
  gauges: GaugeRow[],
  minutes: MinuteRow[],
  nowMs: number,
  storage: StorageReport = emptyStorage({ tally: 0, mailbox: 0, host: 0 }),
  totalRows: TotalRow[] = [],
  usageRows: UsageRow[] = [],
): StatsSnapshot {
  const window = STATS_LIMITS.window_minutes;
  const last = minuteOf(nowMs);
  const first = last - window + 1;
  const zeros = () => new Array<number>(window).fill(0);
  const byProto = <T>(f: () => T) => Object.fromEntries(STATS_PROTOCOLS.map((p) => [p, f()])) as Record<StatsProtocol, T>;
  const connections = byProto(() => 0);
  const rooms = { passnote: 0, minca: 0 };
  let envelopes = 0;
  let items = 0;
  for (const g of gauges) {
    if (!isProtocol(g.protocol)) continue;
    connections[g.protocol] += g.connections;
    if (g.protocol !== "tally") rooms[g.protocol] += g.rooms_open;
    envelopes += g.envelopes_stored;
    items += g.mailbox_items;
  }
  const per = Object.fromEntries(
    STATS_COUNTERS.map((c) => [c, { total: zeros(), by_protocol: byProto(zeros) }]),
  ) as StatsSnapshot["per_minute"];
  for (const r of minutes) {
    if (r.minute < first || r.minute > last || !isProtocol(r.protocol) || !(STATS_COUNTERS as readonly string[]).includes(r.metric))
      continue;
    const s = per[r.metric as StatsCounter];
    s.total[r.minute - first] += r.n;
    s.by_protocol[r.protocol][r.minute - first] += r.n;
  }
  const totals = Object.fromEntries(STATS_COUNTERS.map((c) => [c, byProto(() => 0)])) as StatsSnapshot["totals"];
  for (const t of totalRows) {
    if (isProtocol(t.protocol) && (STATS_COUNTERS as readonly string[]).includes(t.metric))
      totals[t.metric as StatsCounter][t.protocol] += t.n;
  }
  return {
    at: new Date(nowMs).toISOString(),
    minute: last,
    window_minutes: window,
    flush_interval_ms: STATS_LIMITS.flush_interval_ms,
    connections,
    envelopes_stored: envelopes,
    rooms_open: rooms,
    mailbox_items: items,
    storage,
    totals,
    per_minute: per,
    usage: usageOf(usageRows),
  };
}

function usageOf(rows: UsageRow[]): StatsSnapshot["usage"] {
  const out: StatsSnapshot["usage"] = {};
  for (const r of rows) {
    if (!(USAGE_METRICS as readonly string[]).includes(r.metric)) continue;
    const c = out[r.class] ?? {};
    out[r.class] = c;
    c[r.metric as UsageMetric] = (c[r.metric as UsageMetric] ?? 0) + r.n;
  }
  return out;
}

function isProtocol(p: string): p is StatsProtocol {
  return (STATS_PROTOCOLS as readonly string[]).includes(p);
}

/** Constant-time comparison of a presented bearer token with the configured one. */
export function tokenMatches(header: string | null | undefined, token: string): boolean {
  const m = /^Bearer\s+(.+)$/i.exec(header ?? "");
  if (!m) return false;
  const a = new TextEncoder().encode(m[1].trim());
  const b = new TextEncoder().encode(token);
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return diff === 0;
}
