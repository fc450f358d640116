// Which version of a carry-space record counts (shared/minca/carry.ts): last writer wins per
// record key by (at, version id), deletions included; a revoke keeps what its key wrote before it.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { countsAfterRevoke, strictestCutoff, supersedes } from "../../../../shared/minca/carry";

describe("last writer wins per record key by (at, version id), deletions included", () => {
  it("an older version never replaces a newer one, a deletion included; equal times fall to the greater id", () => {
    expect(supersedes({ at: 2_000, id: "bdeletion" }, { at: 1_000, id: "bzzz" })).toBe(false);
    expect(supersedes({ at: 2_000, id: "ba" }, { at: 2_000, id: "bb" })).toBe(true);
    expect(supersedes({ at: 2_000, id: "bb" }, { at: 2_000, id: "ba" })).toBe(false);
    expect(supersedes(undefined, { at: 0, id: "ba" })).toBe(true);
  });

  it("the order is total: of two different versions exactly one supersedes the other, whatever the order they arrive in", () => {
    fc.assert(
      fc.property(fc.nat(), fc.string(), fc.nat(), fc.string(), (a1, i1, a2, i2) => {
        fc.pre(a1 !== a2 || i1 !== i2);
        expect(supersedes({ at: a1, id: i1 }, { at: a2, id: i2 })).toBe(!supersedes({ at: a2, id: i2 }, { at: a1, id: i1 }));
      }),
    );
  });
});

describe("the Minca protocol §1.2: a revoke keeps what the revoker had seen", () => {
  it("without a cutoff everything the key wrote before keeps counting; with one, only what it wrote at or before it", () => {
    expect(countsAfterRevoke(9_999, null)).toBe(true);
    expect(countsAfterRevoke(2_000, 2_000)).toBe(true);
    expect(countsAfterRevoke(2_001, 2_000)).toBe(false);
  });
  it("a key revoked twice keeps the stricter cutoff", () => {
    expect(strictestCutoff(null, 5)).toBe(5);
    expect(strictestCutoff(7, 5)).toBe(5);
    expect(strictestCutoff(7, null)).toBe(7);
  });
});
