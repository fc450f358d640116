import { describe, expect, it } from "vitest";
import { TokenBucket } from "../../../shared/rate-limit";

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
