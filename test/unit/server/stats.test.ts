// The status page's pure parts: the snapshot from the stats object's rows, the admin token
// check, and the page itself.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { buildSnapshot, minuteOf, parseStatsReport, statsReportSchema, tokenMatches } from "../../../server/stats";
import { renderStatusPage } from "../../../server/stats-page";
import { STATS_LIMITS } from "../../../shared/limits";
import "../../helpers/fast-check-seed";

const now = Date.UTC(2026, 11, 2, 12, 0, 30);
const m = minuteOf(now);

describe("the snapshot", () => {
  it("sums current values by protocol and lays per-minute counts out oldest first over the window", () => {
    const s = buildSnapshot(
      [
        { protocol: "tally", connections: 3, envelopes_stored: 7, rooms_open: 0, mailbox_items: 0 },
        { protocol: "minca", connections: 2, envelopes_stored: 0, rooms_open: 1, mailbox_items: 4 },
      ],
      [
        { minute: m, protocol: "tally", metric: "deliveries", n: 5 },
        { minute: m, protocol: "minca", metric: "deliveries", n: 1 },
        { minute: m - 1, protocol: "passnote", metric: "errors", n: 2 },
        { minute: m - STATS_LIMITS.window_minutes, protocol: "tally", metric: "deliveries", n: 99 },
        { minute: m, protocol: "nostr", metric: "deliveries", n: 99 },
      ],
      now,
    );
    expect(s.connections).toEqual({ tally: 3, passnote: 0, minca: 2 });
    expect([s.envelopes_stored, s.rooms_open, s.mailbox_items]).toEqual([7, { passnote: 0, minca: 1 }, 4]);
    const last = STATS_LIMITS.window_minutes - 1;
    expect(s.per_minute.deliveries.total[last]).toBe(6);
    expect(s.per_minute.deliveries.by_protocol.tally[last]).toBe(5);
    expect(s.per_minute.errors.total[last - 1]).toBe(2);
    expect(s.per_minute.deliveries.total.reduce((a, b) => a + b)).toBe(6);
  });

  it("a report holds counts only: unknown fields are refused", () => {
    const ok = { reporter: "0".repeat(32), protocol: "tally", gauges: { connections: 1 }, counts: [{ minute: m, metric: "errors", n: 1 }] };
    expect(statsReportSchema.safeParse(ok).success).toBe(true);
    expect(statsReportSchema.safeParse({ ...ok, user: "npub1x" }).success).toBe(false);
    expect(statsReportSchema.safeParse({ ...ok, counts: [{ minute: m, metric: "errors", n: 1, room: "r" }] }).success).toBe(false);
    expect(statsReportSchema.safeParse({ ...ok, gauges: { topics: 1 } }).success).toBe(false);
  });
});

describe("parseStatsReport: statsReportSchema's rule without zod", () => {
  const ok = { reporter: "0".repeat(32), protocol: "tally", gauges: { connections: 1 }, counts: [{ minute: m, metric: "errors", n: 1 }] };
  const agrees = (v: unknown) => {
    const z = statsReportSchema.safeParse(v);
    expect(parseStatsReport(v) !== null, JSON.stringify(v)).toBe(z.success);
  };

  it("refuses what the schema refuses and takes what it takes: unknown fields at any level, wrong kinds, negatives, fractions, too many counts", () => {
    expect(parseStatsReport(ok)).toEqual(ok);
    for (const v of [
      { ...ok, user: "npub1x" },
      { ...ok, counts: [{ minute: m, metric: "errors", n: 1, room: "r" }] },
      { ...ok, gauges: { topics: 1 } },
      { ...ok, gauges: { connections: -1 } },
      { ...ok, gauges: { connections: 1.5 } },
      { ...ok, gauges: { connections: undefined } },
      { ...ok, gauges: { connections: 2 ** 53 } },
      { ...ok, gauges: [] },
      { ...ok, reporter: "0".repeat(31) },
      { ...ok, reporter: "A".repeat(32) },
      { ...ok, protocol: "nostr" },
      { ...ok, counts: {} },
      { ...ok, counts: [{ minute: -1, metric: "errors", n: 1 }] },
      { ...ok, counts: [{ minute: m, metric: "pings", n: 1 }] },
      { ...ok, counts: [{ minute: m, metric: "errors" }] },
      { ...ok, counts: [null] },
      { ...ok, counts: Array.from({ length: STATS_LIMITS.window_minutes * 4 + 1 }, () => ({ minute: m, metric: "errors", n: 1 })) },
      { ...ok, counts: Array.from({ length: STATS_LIMITS.window_minutes * 4 }, () => ({ minute: m, metric: "errors", n: 1 })) },
      { ...ok, gauges: {}, counts: [] },
      { reporter: ok.reporter, usage: { class: "RelayLedger", n: { rpc: 2, rows_read: 10 } }, gauges: {}, counts: [] },
      { ...ok, usage: { class: "TallyUser", n: { socket_message: 1, rows_written: 3 } } },
      { ...ok, usage: { class: "TallyUser", n: { pings: 1 } } },
      { ...ok, usage: { class: "tallyUser", n: {} } },
      { ...ok, usage: { class: "Tally_User", n: {} } },
      { ...ok, usage: { class: "TallyUser", n: { rpc: -1 } } },
      { ...ok, usage: { class: "TallyUser", n: {}, user: "x" } },
      { ...ok, usage: { class: "TallyUser" } },
      { ...ok, protocol: undefined },
      null,
      [],
      "report",
    ]) {
      agrees(v);
    }
  });

  it("agrees with the schema on arbitrary reports (fuzzed)", () => {
    const num = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.double(), fc.constant(2 ** 53), fc.constant(Number.MAX_SAFE_INTEGER));
    const anyOf = <T>(good: fc.Arbitrary<T>) => fc.oneof({ weight: 4, arbitrary: good }, { weight: 1, arbitrary: fc.anything() });
    const count = anyOf(
      fc.record(
        {
          minute: anyOf(num),
          metric: anyOf(fc.constantFrom("messages", "deliveries", "errors", "connections_opened", "x")),
          n: anyOf(num),
        },
        { requiredKeys: [] },
      ),
    );
    const report = fc.record(
      {
        reporter: anyOf(fc.constantFrom("0".repeat(32), "ab".repeat(16), "0".repeat(33), "g".repeat(32))),
        protocol: anyOf(fc.constantFrom("tally", "passnote", "minca", "other")),
        gauges: anyOf(fc.dictionary(fc.constantFrom("connections", "envelopes_stored", "rooms_open", "mailbox_items", "topics"), num)),
        counts: anyOf(fc.array(count, { maxLength: 5 })),
        extra: fc.anything(),
      },
      { requiredKeys: [] },
    );
    fc.assert(fc.property(report, agrees), { numRuns: 2000 });
    fc.assert(fc.property(fc.anything(), agrees), { numRuns: 500 });
  });
});

describe("the admin token", () => {
  it("only Authorization: Bearer with exactly the token passes", () => {
    expect(tokenMatches("Bearer abc123", "abc123")).toBe(true);
    expect(tokenMatches("bearer abc123", "abc123")).toBe(true);
    for (const h of [null, undefined, "", "abc123", "Bearer abc12", "Bearer abc1234", "Basic abc123", "Bearer "]) {
      expect(tokenMatches(h, "abc123")).toBe(false);
    }
  });
});

describe("the status page", () => {
  const empty = buildSnapshot([], [], now);

  it("draws one SVG chart per counter, says when it is open, and escapes the relay's name", () => {
    const html = renderStatusPage(empty, { name: "<script>x</script>", open: true });
    expect(html.match(/<svg /g)).toHaveLength(4);
    expect(html).toContain("No admin token is configured");
    expect(html).not.toContain("<script>");
    expect(html).not.toMatch(/<link|src=|https?:\/\/(?!127)/);
  });

  it("has no banner behind a token", () => {
    expect(renderStatusPage(empty, { name: "r", open: false })).not.toContain("No admin token is configured");
  });
});
