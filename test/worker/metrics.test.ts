// GET /metrics has counters Prometheus' rate() works on (`_total`, never going down while the
// relay runs), a request-latency histogram, build info and the start time.
import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { relayStats } from "../../server/relay-objects";
import { COMMIT, VERSION } from "../../server/info";
import { minuteOf } from "../../server/stats";

async function metrics(): Promise<string> {
  return (await SELF.fetch("http://relay.test/metrics")).text();
}

function sample(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

describe("/metrics counters", () => {
  it("edge_relay_http_requests_total counts answered requests by route pattern and status class, with TYPE counter", async () => {
    const before = await metrics();
    const topic = "M".repeat(43);
    for (let i = 0; i < 3; i++) await (await SELF.fetch(`http://relay.test/minca/v1/mailbox/${topic}`)).arrayBuffer();
    await (await SELF.fetch("http://relay.test/no-such-thing")).arrayBuffer();
    const after = await metrics();
    expect(after).toContain("# TYPE edge_relay_http_requests_total counter");
    const ok = 'edge_relay_http_requests_total{route="/minca/v1/mailbox/:topic",code="2xx"}';
    expect(sample(after, ok) - sample(before, ok)).toBe(3);
    const other = 'edge_relay_http_requests_total{route="other",code="4xx"}';
    expect(sample(after, other) - sample(before, other)).toBe(1);
    expect(after).not.toContain(topic);
  });

  it("a request-latency histogram, build info with the version, and the start time for uptime", async () => {
    const text = await metrics();
    expect(text).toContain("# TYPE edge_relay_http_request_duration_seconds histogram");
    expect(text).toMatch(/^edge_relay_http_request_duration_seconds_bucket\{le="\+Inf"\} \d+$/m);
    expect(text).toMatch(/^edge_relay_http_request_duration_seconds_count \d+$/m);
    expect(text).toContain(`edge_relay_build_info{version="${VERSION}",commit="${COMMIT}",runtime="cloudflare"} 1`);
    const start = sample(text, "process_start_time_seconds");
    expect(start).toBeGreaterThan(1_600_000_000);
    expect(start).toBeLessThanOrEqual(Date.now() / 1000);
  });

  it("sockets opened and closed, messages: relay-wide _total counters that keep counting past the stats window", async () => {
    const before = await metrics();
    const stats = relayStats(env);
    const old = minuteOf(Date.now()) - 10_000; // far older than the window: still counted in the total
    await stats.report({
      reporter: "f".repeat(32),
      protocol: "passnote",
      gauges: { connections: 1 },
      counts: [
        { minute: minuteOf(Date.now()), metric: "connections_opened", n: 3 },
        { minute: old, metric: "messages", n: 5 },
      ],
    });
    const after = await metrics();
    const d = (s: string) => sample(after, s) - sample(before, s);
    expect(after).toContain("# TYPE edge_relay_sockets_opened_total counter");
    expect(d('edge_relay_sockets_opened_total{protocol="passnote"}')).toBe(3);
    expect(d('edge_relay_sockets_closed_total{protocol="passnote"}')).toBe(2);
    expect(d('edge_relay_messages_total{protocol="passnote"}')).toBe(5);
    await stats.report({ reporter: "f".repeat(32), protocol: "passnote", gauges: {}, counts: [] });
  });
});
