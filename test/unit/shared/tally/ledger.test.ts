import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  SYNC_LIMITS,
  acceptableEntries,
  chronological,
  chunkEntries,
  classifyEntry,
  entriesForPeer,
  innerToLedgerEntry,
  knownIdsFor,
  verifyLedgerEntry,
  type LedgerEntry,
} from "../../../../shared/tally/ledger";
import { signInner } from "../../../../shared/tally/proof";
import { newUser, type User } from "../../../helpers/tally";

let n = 0;
function entry(from: User, to: User, at: string, extra: Record<string, unknown> = {}): LedgerEntry {
  const inner = { id: `e${n++}`, type: "note", from_user_id: from.npub, to_user_id: to.npub, created_at: at, payload: { n }, ...extra };
  return innerToLedgerEntry(signInner(inner, from.secretKey), new Date());
}

const alice = newUser();
const bob = newUser();
const carol = newUser();

describe("ledger entries (12.6)", () => {
  it("3.3: an entry verifies by rebuilding the inner message with originated_at for created_at", () => {
    const e = entry(alice, bob, "2026-01-01T00:00:00.000Z", { x_unknown: [1] });
    expect(e.originated_at).toBe("2026-01-01T00:00:00.000Z");
    expect(e.created_at).toBeUndefined();
    expect(verifyLedgerEntry(e)).toBe(true);
    expect(verifyLedgerEntry({ ...e, originated_at: "2026-01-02T00:00:00.000Z" })).toBe(false);
    expect(verifyLedgerEntry({ ...e, timestamp: "anything" })).toBe(true); // the receive time is not signed
  });
});

describe("entry classification (12.7)", () => {
  it("addressed to me is inbound-like; authored by me is outbound-only; others are foreign", () => {
    expect(classifyEntry({ from_user_id: bob.npub, to_user_id: alice.npub }, alice.npub)).toBe("inbound");
    expect(classifyEntry({ from_user_id: alice.npub, to_user_id: bob.npub }, alice.npub)).toBe("outbound");
    expect(classifyEntry({ from_user_id: bob.npub, to_user_id: carol.npub }, alice.npub)).toBe("foreign");
  });

  it("12.7: entries apply in chronological order", () => {
    const late = entry(bob, alice, "2026-01-02T00:00:00.000Z");
    const early = entry(bob, alice, "2026-01-01T00:00:00.000Z");
    expect(chronological([late, early]).map((e) => e.id)).toEqual([early.id, late.id]);
  });
});

describe("what a peer is sent (12.6, 13.6)", () => {
  const ab = entry(alice, bob, "2026-01-01T00:00:00.000Z");
  const ba = entry(bob, alice, "2026-01-01T00:00:01.000Z");
  const ac = entry(alice, carol, "2026-01-01T00:00:02.000Z");
  const ledger = [ab, ba, ac];

  it("12.6: a friend gets the entries between the two parties minus the ids it knows", () => {
    expect(entriesForPeer(ledger, alice.npub, bob.npub, []).map((e) => e.id)).toEqual([ab.id, ba.id]);
    expect(entriesForPeer(ledger, alice.npub, bob.npub, [ab.id]).map((e) => e.id)).toEqual([ba.id]);
  });

  it("13.6: an own device gets every entry, not a bilateral slice", () => {
    expect(entriesForPeer(ledger, alice.npub, alice.npub, [ba.id]).map((e) => e.id)).toEqual([ab.id, ac.id]);
  });

  it(`12.5: a sync_hello names at most ${SYNC_LIMITS.max_known_ids} known ids, the most recent`, () => {
    const many = Array.from({ length: SYNC_LIMITS.max_known_ids + 10 }, (_, i) => ({
      ...ab,
      id: `k${i}`,
      originated_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
    }));
    const ids = knownIdsFor(many, alice.npub, bob.npub);
    expect(ids.length).toBe(SYNC_LIMITS.max_known_ids);
    expect(ids[0]).toBe("k10");
  });

  it("sync_data is cut into messages that each fit one envelope", () => {
    const big = Array.from({ length: 50 }, (_, i) => ({ ...ab, id: `b${i}`, payload: { pad: "x".repeat(3000) } }));
    const chunks = chunkEntries(big);
    expect(chunks.flat().length).toBe(50);
    for (const c of chunks) expect(new TextEncoder().encode(JSON.stringify(c)).length).toBeLessThanOrEqual(SYNC_LIMITS.max_sync_data_bytes);
    expect(chunks.length).toBeGreaterThan(1);
  });
});

describe("judging a received sync_data (12.7)", () => {
  it("forged entries are dropped silently; valid ones come back in chronological order", () => {
    const good1 = entry(bob, alice, "2026-01-02T00:00:00.000Z");
    const good2 = entry(alice, bob, "2026-01-01T00:00:00.000Z");
    const forged = { ...good1, id: "forged", payload: { amount: 1e6 } };
    const out = acceptableEntries([good1, forged, good2], alice.npub, bob.npub);
    expect(out.map((e) => e.id)).toEqual([good2.id, good1.id]);
  });

  it("a friend cannot hand over entries of a third party", () => {
    const third = entry(carol, alice, "2026-01-01T00:00:00.000Z");
    expect(acceptableEntries([third], alice.npub, bob.npub)).toEqual([]);
    // ... while an own device may (the full ledger, 13.6).
    expect(acceptableEntries([third], alice.npub, alice.npub).map((e) => e.id)).toEqual([third.id]);
  });

  it("fuzz: any JSON in entries is judged without throwing and never accepted unless signed", () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue(), { maxLength: 8 }), (raw) => {
        expect(acceptableEntries(raw, alice.npub, bob.npub)).toEqual([]);
      }),
      { seed: 7, numRuns: 300 },
    );
  });
});
