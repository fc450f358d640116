// docs/mailbox.md, "Sending against a hostile push service": the gates pushes pass before they
// leave, one per push origin (a registrable domain) and one for the whole relay.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { getDomain } from "tldts-icann";
import { TokenBucket, type Rate } from "../../../../shared/rate-limit";
import { WEBPUSH_LIMITS } from "../../../../shared/limits";
import { admitThroughGates, type AskGate } from "../../../../server/webpush/admit";
import { pushDomain, SECOND_LEVEL_SUFFIXES } from "../../../../server/webpush/endpoint";
import "../../../helpers/fast-check-seed";

/** Gates as plain token buckets on a frozen clock (no refill during a test). */
function gates() {
  const buckets = new Map<string, TokenBucket>();
  const asked: string[] = [];
  const ask: AskGate = async (name, n, rate: Rate) => {
    asked.push(name);
    const b = buckets.get(name) ?? new TokenBucket(rate.burst, rate.perSecond, 0);
    buckets.set(name, b);
    let granted = 0;
    while (granted < n && b.take(0)) granted++;
    return { granted, retryAfterMs: granted < n ? Math.max(1_000, b.retryAfterMs()) : 0 };
  };
  return { ask, asked };
}

const ep = (host: string, i: number) => `https://${host}/push/${i}`;

/** Endpoints through the gates at time 0, each its own push (5 s fallback when a gate cannot be asked). */
const admitAt0 = (ask: AskGate, endpoints: string[]) =>
  admitThroughGates(
    ask,
    endpoints,
    (e) => e,
    5_000,
    () => 0,
  );

describe("docs/mailbox.md: a push origin is a registrable domain", () => {
  it("every subdomain of one domain is one push origin; the big push services are their domains; IP literals and public suffixes count as themselves", () => {
    expect(pushDomain("https://a.evil.example/x")).toBe("evil.example");
    expect(pushDomain("https://b.c.evil.example./x")).toBe("evil.example");
    expect(pushDomain("https://fcm.googleapis.com/fcm/send/x")).toBe("googleapis.com");
    expect(pushDomain("https://updates.push.services.mozilla.com/wpush/v2/x")).toBe("mozilla.com");
    expect(pushDomain("https://web.push.apple.com/x")).toBe("apple.com");
    expect(pushDomain("https://a.b.nip.io/x")).toBe("nip.io"); // a wildcard DNS service is one origin
    expect(pushDomain("https://x.victim.co.uk/x")).toBe("victim.co.uk");
    expect(pushDomain("http://127.0.0.1:9000/push/1")).toBe("127.0.0.1");
    expect(pushDomain("http://[::1]:9000/push/1")).toBe("[::1]");
    expect(pushDomain("not a url")).toBe("null");
  });

  it("without a list of every public suffix: an unlisted multi-label suffix groups every domain under it (the safe side), a listed one does not; empty labels count for nothing", () => {
    expect(pushDomain("https://a.victim.com.bd/x")).toBe("com.bd");
    expect(pushDomain("https://b.other.com.bd/x")).toBe("com.bd");
    expect(pushDomain("https://push.example.com.au/x")).toBe("example.com.au");
    expect(pushDomain("https://co.uk/x")).toBe("co.uk");
    expect(pushDomain("https://a..evil.example../x")).toBe("evil.example");
    expect(pushDomain("https://localhost/x")).toBe("localhost");
  });

  it("never splits what the Public Suffix List groups: the PSL's registrable domain (ICANN section) is always the push origin or under it (fuzzed, with the list as a dev dependency)", () => {
    const check = (host: string) => {
      const ours = pushDomain(`https://${host}/x`);
      const psl = getDomain(host);
      if (psl !== null) expect(psl === ours || psl.endsWith(`.${ours}`), `${host}: ${ours} against ${psl}`).toBe(true);
    };
    // Every listed second-level suffix is one the list has, with nothing below it: three labels exactly.
    for (const suffix of SECOND_LEVEL_SUFFIXES) {
      expect(getDomain(`a.b.${suffix}`)).toBe(`b.${suffix}`);
      expect(pushDomain(`https://a.b.${suffix}/x`)).toBe(`b.${suffix}`);
    }
    for (const suffix of ["co.uk", "com.au", "co.jp", "com.br", "com.bd", "k12.ma.us", "ck", "kawasaki.jp", "github.io"])
      for (const pre of ["a", "a.b", "a.b.c", "www"]) check(`${pre}.${suffix}`);
    fc.assert(fc.property(fc.domain(), check));
    const labels = fc.constantFrom(
      "a",
      "b",
      "www",
      "co",
      "com",
      "net",
      "org",
      "uk",
      "au",
      "jp",
      "bd",
      "us",
      "k12",
      "ma",
      "ck",
      "gov",
      "ac",
    );
    fc.assert(fc.property(fc.array(labels, { minLength: 1, maxLength: 5 }), (ls) => check(ls.join("."))));
  });

  it("pushDomain never throws (fuzzed)", () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        pushDomain(s);
      }),
    );
    fc.assert(
      fc.property(fc.webUrl(), (s) => {
        expect(pushDomain(s).length).toBeGreaterThan(0);
      }),
    );
  });
});

describe("docs/mailbox.md: the gates a push passes", () => {
  it("many subdomains of one domain share one gate: 300 pushes to 3 subdomains get the origin burst, not 3 of them", async () => {
    const g = gates();
    const items = [0, 1, 2].flatMap((s) => Array.from({ length: 100 }, (_, i) => ep(`s${s}.evil.example`, i)));
    const out = await admitAt0(g.ask, items);
    expect(out.go).toHaveLength(WEBPUSH_LIMITS.origin_push_burst);
    expect(out.wait).toHaveLength(300 - WEBPUSH_LIMITS.origin_push_burst);
    expect(out.wait.every((w) => w.at > 0)).toBe(true);
    expect(out.held).toEqual([{ origin: "evil.example", gate: "origin", waiting: 100 }]);
  });

  it("a relay-wide budget: pushes to many domains together get at most relay_push_burst at once, shared out among the domains", async () => {
    const g = gates();
    const domains = 2 * Math.ceil(WEBPUSH_LIMITS.relay_push_burst / WEBPUSH_LIMITS.origin_push_burst);
    const items = Array.from({ length: domains }, (_, d) =>
      Array.from({ length: WEBPUSH_LIMITS.origin_push_burst }, (_, i) => ep(`push.d${d}.example`, i)),
    ).flat();
    const out = await admitAt0(g.ask, items);
    expect(out.go).toHaveLength(WEBPUSH_LIMITS.relay_push_burst);
    expect(out.go.length + out.wait.length).toBe(items.length);
    const per = new Map<string, number>();
    for (const e of out.go) per.set(pushDomain(e), (per.get(pushDomain(e)) ?? 0) + 1);
    expect(per.size).toBe(domains); // every domain gets its turn
    expect(Math.max(...per.values()) - Math.min(...per.values())).toBeLessThanOrEqual(1);
    expect(out.held.some((h) => h.gate === "relay")).toBe(true);
    // The budget is spent: the next batch, to a fresh domain, waits for the relay's gate.
    const next = await admitAt0(g.ask, [ep("push.fresh.example", 1)]);
    expect(next.go).toEqual([]);
    expect(next.wait[0].at).toBeGreaterThan(0);
  });

  it("a gate that cannot be asked holds its pushes for the fallback time", async () => {
    const out = await admitThroughGates(
      async () => {
        throw new Error("down");
      },
      [ep("push.example", 1)],
      (e) => e,
      5_000,
      () => 100,
    );
    expect(out.go).toEqual([]);
    expect(out.wait).toEqual([{ item: ep("push.example", 1), at: 5_100 }]);
  });
});
