// Carrier slots (server/minca/carrier-slots.ts): members are never locked out of a space's slots.
import { describe, expect, it } from "vitest";
import { slotFor, type Carrier } from "../../../../server/minca/carrier-slots";
import type { Constitution } from "../../../../shared/minca/space";

const constitution = { v: 1, founders: ["did:key:f"], visibility: "private", readKey: "did:key:zRead", nonce: "n" } as Constitution;
const full = (n: number, readKey: string | null = "did:key:zMadeUp"): Carrier[] =>
  Array.from({ length: n }, (_x, i) => ({ account: `a${i}`, readKey, added: i + 1 }));

describe("carrier slots: a pass proven with the constitution's own read key takes the slot of the most recently added pass that is not", () => {
  it("below the bound everyone gets a slot; a carrier already there keeps its own", () => {
    expect(slotFor(full(3), "new", "did:key:zOther", constitution, 4)).toEqual({ ok: true, evict: null });
    expect(slotFor(full(4), "a2", "did:key:zOther", constitution, 4)).toEqual({ ok: true, evict: null });
  });
  it("when full, a stranger is refused and a member takes the most recently added stranger's slot", () => {
    const carriers = [...full(3), { account: "m", readKey: "did:key:zRead", added: 9 }];
    expect(slotFor(carriers, "s", "did:key:zOther", constitution, 4)).toEqual({ ok: false });
    expect(slotFor(carriers, "m2", "did:key:zRead", constitution, 4)).toEqual({ ok: true, evict: "a2" });
  });
  it("a member is never refused, even when every slot is a member's", () => {
    expect(slotFor(full(4, "did:key:zRead"), "m", "did:key:zRead", constitution, 4)).toEqual({ ok: true, evict: null });
  });
});

describe("carrier slots: the founder's account is never refused a slot, and a later read key a founder proves ranks with the constitution's", () => {
  const pub = { v: 1, founders: ["did:key:f"], visibility: "public", nonce: "n" } as Constitution;
  it("the founder's account is never refused a slot, public space included: it takes the most recently added stranger's", () => {
    expect(slotFor(full(4, null), "did:key:f", null, pub, 4)).toEqual({ ok: true, evict: "a3" });
    expect(slotFor(full(4), "did:key:f", "did:key:zRead", constitution, 4)).toEqual({ ok: true, evict: "a3" });
    // a founder whose pass names a later read key is a founder all the same
    expect(slotFor(full(4), "did:key:f", "did:key:zLater", constitution, 4)).toEqual({ ok: true, evict: "a3" });
  });
  it("a founder already carrying is never evicted: a member takes a stranger's slot, never the founder's", () => {
    const carriers = [...full(3), { account: "did:key:f", readKey: "did:key:zRead", added: 9 }];
    expect(slotFor(carriers, "m", "did:key:zRead", constitution, 4)).toEqual({ ok: true, evict: "a2" });
  });
  it("a pass proving a later read key that a founder's account proves ranks with the constitution's; a made-up later key does not", () => {
    const carriers = [...full(3), { account: "did:key:f", readKey: "did:key:zLater", added: 9 }];
    expect(slotFor(carriers, "m", "did:key:zLater", constitution, 4)).toEqual({ ok: true, evict: "a2" });
    expect(slotFor(carriers, "s", "did:key:zMadeUpToo", constitution, 4)).toEqual({ ok: false });
  });
});
