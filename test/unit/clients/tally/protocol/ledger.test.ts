import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  PartCollector,
  SYNC_LIMITS,
  acceptableEntries,
  chronological,
  classifyEntry,
  emptyKnown,
  entriesForPeer,
  entriesOfParts,
  helloParts,
  innerToLedgerEntry,
  knownFromHello,
  ledgerEntryToInner,
  syncDataParts,
  syncDataPayloadSchema,
  syncHelloPayloadSchema,
  verifyLedgerEntry,
  type LedgerEntry,
  type SyncDataPayload,
} from "../../../../../clients/tally/protocol/ledger";
import { signInner } from "../../../../../shared/tally/proof";
import { newUser, type User } from "../../../../helpers/tally";

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

  const known = (ids: string[]) => ({ ids: new Set(ids), hashes: new Set<string>() });

  it("12.6: a friend gets the entries between the two parties minus the ids it knows", () => {
    expect(entriesForPeer(ledger, alice.npub, bob.npub, emptyKnown()).map((e) => e.id)).toEqual([ab.id, ba.id]);
    expect(entriesForPeer(ledger, alice.npub, bob.npub, known([ab.id])).map((e) => e.id)).toEqual([ba.id]);
  });

  it("13.6: an own device gets every entry, not a bilateral slice", () => {
    expect(entriesForPeer(ledger, alice.npub, alice.npub, known([ba.id])).map((e) => e.id)).toEqual([ab.id, ac.id]);
  });

  it("12.5 send all known ids: a hello names every one of 10,000 entries, compactly, so equal ledgers exchange nothing", () => {
    const many: LedgerEntry[] = Array.from({ length: 10_000 }, (_, i) => ({ ...ab, id: `k${i}` }));
    const parts = helloParts(many, alice.npub, bob.npub, "set1");
    expect(parts.length).toBeGreaterThan(1);
    for (const p of parts) {
      expect(syncHelloPayloadSchema.safeParse(p).success).toBe(true);
      expect(new TextEncoder().encode(JSON.stringify(p)).length).toBeLessThanOrEqual(SYNC_LIMITS.max_payload_bytes);
    }
    const theirs = knownFromHello(parts);
    expect(entriesForPeer(many, alice.npub, bob.npub, theirs)).toEqual([]);
    // One entry the asker lacks is the only one sent.
    const more = [...many, { ...ab, id: "new" }];
    expect(entriesForPeer(more, alice.npub, bob.npub, theirs).map((e) => e.id)).toEqual(["new"]);
  });

  it("12.5 known_ids is filled when the hello does not fit one message: every part names its share of the ids, and all parts together every id", () => {
    const many: LedgerEntry[] = Array.from({ length: 3_000 }, (_, i) => ({ ...ab, id: `${i}`.padStart(32, "0") }));
    const parts = helloParts(many, alice.npub, bob.npub, "set2");
    expect(parts.length).toBeGreaterThan(1);
    for (const p of parts) {
      expect(p.known_ids?.length).toBeGreaterThan(0);
      expect(syncHelloPayloadSchema.safeParse(p).success).toBe(true);
      expect(new TextEncoder().encode(JSON.stringify(p)).length).toBeLessThanOrEqual(SYNC_LIMITS.max_payload_bytes);
    }
    expect(new Set(parts.flatMap((p) => p.known_ids ?? []))).toEqual(new Set(many.map((e) => e.id)));
    // A reader of the ids alone, given the parts together, lacks nothing.
    const idsOnly = parts.map((p) => ({ known_ids: p.known_ids }));
    expect(entriesForPeer(many, alice.npub, bob.npub, knownFromHello(idsOnly))).toEqual([]);
  });

  it("12.5 a seed-form hello with more than 20,000 ids is read, not refused", () => {
    const ids = Array.from({ length: 20_001 }, (_, i) => `${i}`);
    const hello = syncHelloPayloadSchema.safeParse({ known_ids: [...ids, ab.id] });
    expect(hello.success).toBe(true);
    expect(entriesForPeer(ledger, alice.npub, bob.npub, knownFromHello([hello.data!])).map((e) => e.id)).toEqual([ba.id]);
  });

  it("12.5: the Tally protocol's known_ids form is still understood", () => {
    const hello = syncHelloPayloadSchema.parse({ known_ids: [ab.id] });
    expect(entriesForPeer(ledger, alice.npub, bob.npub, knownFromHello([hello])).map((e) => e.id)).toEqual([ba.id]);
  });
});

describe("12.7 chronological order", () => {
  it("12.7 applied in chronological order: originated_at compares as instants, so a +02:00 time sorts by when it was", () => {
    const ab = entry(alice, bob, "2026-01-01T00:00:00.000Z");
    const early = { ...ab, id: "early", originated_at: "2026-01-01T01:30:00+02:00" }; // 2025-12-31T23:30Z
    const late = { ...ab, id: "late", originated_at: "2026-01-01T00:00:00.000Z" };
    const odd = { ...ab, id: "odd", originated_at: "not a time" };
    expect(chronological([late, odd, early]).map((e) => e.id)).toEqual(["early", "late", "odd"]);
  });
});

describe("ledger keyed by (from_user_id, id) (3.1, 7)", () => {
  it("ledger keyed by (from_user_id, id): a third party reusing an id does not hide the real entry from sync", () => {
    const real = entry(bob, alice, "2026-01-01T00:00:00.000Z");
    const reuse = { ...entry(carol, alice, "2026-01-01T00:00:00.000Z"), id: real.id };
    // The asker holds carol's entry with that id; bob's own entry is still sent.
    const hello = helloParts([reuse], alice.npub, alice.npub, "s");
    expect(entriesForPeer([real, reuse], alice.npub, alice.npub, knownFromHello(hello))).toEqual([real]);
  });
});

describe("preserve unknown inner fields exactly (3)", () => {
  const at = "2026-01-01T00:00:00.000Z";
  it("preserve unknown fields: an inner's own timestamp and originated_at survive the entry, and it verifies after sync", () => {
    const inner = {
      id: "t1",
      type: "note",
      from_user_id: alice.npub,
      to_user_id: bob.npub,
      created_at: at,
      timestamp: 17,
      originated_at: "elsewhere",
      inner_fields: { x: 1 },
      payload: {},
    };
    const signed = signInner(inner, alice.secretKey);
    const e = JSON.parse(JSON.stringify(innerToLedgerEntry(signed, new Date("2026-02-01T00:00:00.000Z"))));
    expect(e.originated_at).toBe(at);
    expect(e.timestamp).toBe("2026-02-01T00:00:00.000Z");
    expect(ledgerEntryToInner(e)).toEqual(signed);
    expect(verifyLedgerEntry(e)).toBe(true);
    expect(acceptableEntries([e], bob.npub, alice.npub).map((x) => x.id)).toEqual(["t1"]);
  });

  it("preserve unknown fields: an inner without created_at (or with a non-string one) can be synced", () => {
    for (const extra of [{}, { created_at: 1_760_000_000 }]) {
      const inner = {
        id: `c${JSON.stringify(extra).length}`,
        type: "note",
        from_user_id: alice.npub,
        to_user_id: bob.npub,
        payload: { a: 1 },
        ...extra,
      };
      const signed = signInner(inner, alice.secretKey);
      const e = JSON.parse(JSON.stringify(innerToLedgerEntry(signed, new Date(at))));
      expect(typeof e.originated_at).toBe("string");
      expect(ledgerEntryToInner(e)).toEqual(signed);
      expect(acceptableEntries([e], bob.npub, alice.npub)).toHaveLength(1);
    }
  });

  it("an ordinary inner message maps to the Tally protocol's entry shape exactly, with nothing added", () => {
    const e = entry(alice, bob, at);
    expect(Object.keys(e).sort()).toEqual(["from_user_id", "id", "originated_at", "payload", "proof", "timestamp", "to_user_id", "type"]);
  });
});

describe("cutting an answer (12.4-12.7)", () => {
  const stamp = (i: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();

  it("chronological replay across chunks: entries stored out of order come out of every part in time order, applied only once whole", () => {
    // Storage order is newest first; the answer spans several parts.
    const stored = Array.from({ length: 60 }, (_, i) => entry(bob, alice, stamp(60 - i), { payload: { pad: "x".repeat(3000) } }));
    const parts = syncDataParts(entriesForPeer(stored, bob.npub, alice.npub), "s1");
    expect(parts.length).toBeGreaterThan(2);
    for (const p of parts) expect(new TextEncoder().encode(JSON.stringify(p)).length).toBeLessThanOrEqual(SYNC_LIMITS.max_payload_bytes);
    // Parts arrive in reverse (another path, another relay): nothing comes out until the last one.
    const collector = new PartCollector<SyncDataPayload>();
    const reversed = [...parts].reverse();
    for (const p of reversed.slice(0, -1)) expect(collector.add(bob.npub, p)).toBeUndefined();
    const whole = collector.add(bob.npub, reversed.at(-1)!)!;
    const out = acceptableEntries(entriesOfParts(whole), alice.npub, bob.npub);
    expect(out.map((e) => e.originated_at)).toEqual([...stored].reverse().map((e) => e.originated_at));
  });

  it("entries too large for one chunk are still synced: a 62 KB entry travels in pieces and verifies", () => {
    const big = entry(bob, alice, stamp(1), { payload: { blob: "y".repeat(62_000) } });
    const small = entry(bob, alice, stamp(2));
    const parts = syncDataParts([big, small], "s2");
    expect(parts.length).toBeGreaterThanOrEqual(2);
    for (const p of parts) {
      expect(syncDataPayloadSchema.safeParse(JSON.parse(JSON.stringify(p))).success).toBe(true);
      expect(new TextEncoder().encode(JSON.stringify(p)).length).toBeLessThanOrEqual(SYNC_LIMITS.max_payload_bytes);
    }
    const out = acceptableEntries(entriesOfParts(JSON.parse(JSON.stringify(parts))), alice.npub, bob.npub);
    expect(out.map((e) => e.id)).toEqual([big.id, small.id]);
  });

  it("friend sync over the relay is windowed: an answer stops after the window and says there is more", () => {
    const stored = Array.from({ length: 100 }, (_, i) => entry(bob, alice, stamp(i), { payload: { pad: "x".repeat(3000) } }));
    const parts = syncDataParts(stored, "s3", { windowParts: SYNC_LIMITS.relay_window_parts });
    expect(parts.length).toBe(SYNC_LIMITS.relay_window_parts);
    expect(parts.every((p) => p.more === true)).toBe(true);
    const got = entriesOfParts(parts) as LedgerEntry[];
    expect(got.map((e) => e.id)).toEqual(stored.slice(0, got.length).map((e) => e.id)); // the oldest first
  });

  it("fuzz: part sets and pieces of any shape never throw", () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue(), { maxLength: 6 }), (raw) => {
        const parts = raw
          .map((r) => syncDataPayloadSchema.safeParse(r))
          .filter((r) => r.success)
          .map((r) => r.data!);
        expect(() => entriesOfParts(parts)).not.toThrow();
        const c = new PartCollector<SyncDataPayload>();
        for (const p of parts) c.add("x", p);
      }),
      { seed: 11, numRuns: 300 },
    );
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
