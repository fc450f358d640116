// Wakes (docs/hosting.md, the Minca protocol §4.4): matching reads a version's outside only; the push body and
// its Topic.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { wakeBodySchema, receiverBodySchema } from "../../../../shared/minca/carry";
import { wakeMatches, wakePayload, wakeTopic, type Arrival } from "../../../../server/minca/wake";
import { MINCA_WAKE_LIMITS } from "../../../../shared/limits";

const ACCOUNT = "did:key:zAccount";
const a: Arrival = {
  id: "bid",
  space: "bs1",
  collection: "std.message",
  key: "k",
  author: "did:key:zS",
  at: 1,
  topics: ["t1", "t2"],
  deleted: false,
  root: "did:key:zOther",
};

describe("the Minca protocol §4.4: a carrier matches arriving versions against the wakes from their outside alone", () => {
  it("space in spaces (or all), collection equal, every topic listed carried", () => {
    const w = { v: 1 as const, name: "n", spaces: ["bs1"], collection: "std.message" };
    expect(wakeMatches(w, a, ACCOUNT)).toBe(true);
    expect(wakeMatches({ ...w, spaces: "all" as const }, { ...a, space: "bs9" }, ACCOUNT)).toBe(true);
    expect(wakeMatches(w, { ...a, space: "bs2" }, ACCOUNT)).toBe(false);
    expect(wakeMatches(w, { ...a, collection: "std.reaction" }, ACCOUNT)).toBe(false);
    expect(wakeMatches({ ...w, topics: ["t1"] }, a, ACCOUNT)).toBe(true);
    expect(wakeMatches({ ...w, topics: ["t1", "t3"] }, a, ACCOUNT)).toBe(false);
  });

  it("with others, a version whose note roots at the account itself wakes nothing", () => {
    const w = { v: 1 as const, name: "n", spaces: "all" as const, collection: "std.message", others: true as const };
    expect(wakeMatches(w, a, ACCOUNT)).toBe(true);
    expect(wakeMatches(w, { ...a, root: ACCOUNT }, ACCOUNT)).toBe(false);
  });

  it("the push is the version as held while the encrypted message stays under 3 KB, else { id, space, collection, key }; Topic is 32 base64url characters of the id's hash", () => {
    const small = JSON.stringify({ id: "bid", x: "y" });
    expect(new TextDecoder().decode(wakePayload(small, a))).toBe(small);
    const edge = "x".repeat(MINCA_WAKE_LIMITS.push_max_bytes - 103 - 1);
    expect(wakePayload(edge, a).length).toBe(edge.length);
    const big = "x".repeat(MINCA_WAKE_LIMITS.push_max_bytes - 103);
    expect(JSON.parse(new TextDecoder().decode(wakePayload(big, a)))).toEqual({
      id: "bid",
      space: "bs1",
      collection: "std.message",
      key: "k",
    });
    expect(wakeTopic("bid")).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(wakeTopic("bid")).not.toBe(wakeTopic("bie"));
  });

  it("wake and receiver bodies: schemas take any JSON without throwing (fuzz)", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (j) => {
        wakeBodySchema.safeParse(j);
        expect(receiverBodySchema.safeParse(j).success).toBe(false);
      }),
      { seed: 921, numRuns: 300 },
    );
  });
});
