import { describe, expect, it } from "vitest";
import { FailureThrottle } from "../../../server/operator-session";
import { ADMIN_LIMITS, COMMON_LIMITS } from "../../../shared/limits";
import { ClientBuckets, ClientShares, TokenBucket } from "../../../shared/rate-limit";

describe("TokenBucket", () => {
  it("allows a burst, then refills at the sustained rate", () => {
    const b = new TokenBucket(3, 2, 0);
    expect([b.take(0), b.take(0), b.take(0), b.take(0)]).toEqual([true, true, true, false]);
    expect(b.retryAfterMs()).toBe(500);
    expect(b.take(499)).toBe(false);
    expect(b.take(1000)).toBe(true);
  });
  it("counts refusals within a minute", () => {
    const b = new TokenBucket(1, 1, 0);
    expect([b.strike(0), b.strike(10), b.strike(59_000)]).toEqual([1, 2, 3]);
    expect(b.strike(130_000)).toBe(1);
  });
});

describe("client bucket maps evict the least recently used", () => {
  it("bucket maps evict least recently used: many new addresses forget the idle ones, never the bucket of a client still sending", () => {
    const buckets = new ClientBuckets({ post: { burst: 2, perSecond: 0.001 } }, 100);
    // A client uses up its burst, and keeps sending while 1,000 new addresses pass through.
    expect([buckets.take("post", "abuser", 1, 0), buckets.take("post", "abuser", 1, 0)]).toEqual([null, null]);
    for (let i = 0; i < 1_000; i++) {
      buckets.take("post", `fresh-${i}`, 1, 0);
      if (i % 50 === 0) expect(buckets.take("post", "abuser", 1, 0), `after ${i} addresses`).not.toBeNull();
    }
    expect(buckets.take("post", "abuser", 1, 0)).not.toBeNull();
    // The least recently used are forgotten: an early address starts with a full burst again.
    expect(buckets.take("post", "fresh-0", 1, 0)).toBeNull();
    expect(COMMON_LIMITS.client_buckets_per_object).toBe(10_000);
  });

  it("the wrong-credential throttle evicts least recently used: a flood of other addresses does not lift a blocked address's 429", () => {
    const throttle = new FailureThrottle(100);
    for (let i = 0; i < ADMIN_LIMITS.auth_failures_per_window; i++) throttle.fail("guesser", 0);
    expect(throttle.blocked("guesser", 1)).not.toBeNull();
    for (let i = 0; i < 1_000; i++) {
      throttle.fail(`other-${i}`, 1);
      if (i % 50 === 0) throttle.fail("guesser", 1);
    }
    expect(throttle.blocked("guesser", 2)).not.toBeNull();
  });
});

describe("ClientShares: each client's share of each total, in memory", () => {
  it("charges per client and kind: one client past its share waits, another client and another kind do not", () => {
    const shares = new ClientShares<"mailbox" | "host">(1_000_000, 100);
    expect(shares.wait("mailbox", "a", 1_000, 800, 0)).toBe(0);
    shares.charge("mailbox", "a", 1_000, 800, 0);
    expect(shares.wait("mailbox", "a", 1_000, 800, 0)).toBeGreaterThan(0);
    expect(shares.wait("mailbox", "b", 1_000, 800, 0)).toBe(0);
    expect(shares.wait("host", "a", 1_000, 800, 0)).toBe(0);
  });

  it("remembers at most its bound of clients, forgetting the least recently used first", () => {
    const shares = new ClientShares<"mailbox">(1_000_000, 2);
    shares.charge("mailbox", "a", 1_000, 1_000, 0);
    shares.charge("mailbox", "b", 1_000, 1_000, 0);
    expect(shares.wait("mailbox", "a", 1_000, 1, 0)).toBeGreaterThan(0); // a is now the most recent
    shares.charge("mailbox", "c", 1_000, 1_000, 0);
    expect(shares.wait("mailbox", "a", 1_000, 1, 0)).toBeGreaterThan(0);
    expect(shares.wait("mailbox", "b", 1_000, 1, 0)).toBe(0); // forgotten
  });
});
