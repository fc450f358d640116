// The status page's pure parts: the snapshot from the stats object's rows, the admin token
// check, and the page itself.
import { describe, expect, it } from "vitest";
import { buildSnapshot, minuteOf, statsReportSchema, tokenMatches } from "../../../shared/stats";
import { renderStatusPage } from "../../../server/stats-page";
import { STATS_LIMITS } from "../../../shared/limits";

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
