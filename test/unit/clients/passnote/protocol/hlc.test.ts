// HLC string form (profile, the Passnote protocol "with the HLC in string form") and the seal under the
// passphrase key (the Passnote protocol "The layer stack").
import { describe, expect, it } from "vitest";
import { HlcClock, formatHlc, parseHlc, hlcWall } from "../../../../../clients/passnote/protocol/hlc";
import { openFrame, sealFrame } from "../../../../../clients/passnote/protocol/seal";
import { randomBytes } from "../../../../../shared/encoding";

describe("HLC string form", () => {
  it("formats as 15-digit wall ‖ 5-digit counter ‖ node, and string order is clock order", () => {
    const s = formatHlc({ wall: 1_733_140_000_000, counter: 3, node: "n1" });
    expect(s).toBe("001733140000000-00003-n1");
    expect(parseHlc(s)).toEqual({ wall: 1_733_140_000_000, counter: 3, node: "n1" });
    expect(hlcWall(s)).toBe(1_733_140_000_000);
    expect(parseHlc("1733140000000-3-n1")).toBeNull();
  });

  it("ticks monotonically even when the wall clock stands still or goes back, and moves past remote clocks", () => {
    let now = 1000;
    const c = new HlcClock("me", () => now);
    const a = c.tick();
    const b = c.tick();
    now = 500;
    const d = c.tick();
    expect(a < b && b < d).toBe(true);
    c.observe(formatHlc({ wall: 5000, counter: 7, node: "them" }));
    expect(c.tick()).toBe("000000000005000-00008-me");
  });
});

describe("the Passnote protocol: without an identity every message travels under the passphrase key", () => {
  it("seal/open round-trips; another key, a flipped bit or a truncation opens to null", () => {
    const key = randomBytes(32);
    const frame = randomBytes(100);
    const sealed = sealFrame(key, frame);
    expect(openFrame(key, sealed)).toEqual(frame);
    expect(openFrame(randomBytes(32), sealed)).toBeNull();
    const flipped = sealed.slice();
    flipped[30] ^= 1;
    expect(openFrame(key, flipped)).toBeNull();
    expect(openFrame(key, sealed.subarray(0, 20))).toBeNull();
  });
});
