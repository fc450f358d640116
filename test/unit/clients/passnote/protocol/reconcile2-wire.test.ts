// recon2's message, reconcile2 (tag 0xF0, formerly 8; docs/passnote.md "Range reconciliation, recon2"): its
// layout, and decodeMessage staying fail-closed on it (fuzzed with fast-check at fixed seeds).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Writer } from "../../../../../clients/passnote/protocol/codec";
import { INFINITE_BOUND, type Bound, type Range2, type Reconcile2 } from "../../../../../clients/passnote/protocol/reconcile2-wire";
import { decodeMessage, encodeMessage, MAGIC, type Message } from "../../../../../clients/passnote/protocol/wire";
import { PASSNOTE_LIMITS as L } from "../../../../../shared/limits";
import { bytesToHex, hexToBytes } from "../../../../../shared/encoding";

const none = new Uint8Array(0);
const id = (b: number) => new Uint8Array(16).fill(b);
const sample: Reconcile2 = {
  type: "reconcile2",
  collection: "notes",
  ranges: [
    { upper: { wall: 1000, prefix: none }, mode: "skip" },
    { upper: { wall: 1000, prefix: Uint8Array.of(0x80) }, mode: "fingerprint", count: 3, fingerprint: id(0xaa) },
    { upper: { wall: 2000, prefix: none }, mode: "ids", ids: [id(1), id(2)] },
    { upper: INFINITE_BOUND, mode: "need", ids: [id(3)] },
  ],
};

/** A frame with a hand-written reconcile2 body. */
const frame = (body: (w: Writer) => void) => {
  const w = new Writer().byte(MAGIC).byte(2).byte(8).string("c");
  body(w);
  return w.finish();
};

describe("recon2: the reconcile2 layout", () => {
  it("tag 0xF0: collection, n× (bound: wall delta + 1 or 0 for infinity, prefix; mode; payload), byte for byte; the old tag 8 reads the same", () => {
    const hex = bytesToHex(encodeMessage(sample));
    expect(decodeMessage(hexToBytes("c70208" + hex.slice(6)))).toEqual(sample);
    expect(hex).toBe(
      "c702f0" +
        "056e6f746573" +
        "04" +
        "e907" +
        "00" +
        "00" + // wall 1000 (1000 − 0 + 1 = 1001), no prefix, skip
        "01" +
        "0180" +
        "01" +
        "03" +
        "aa".repeat(16) + // same wall (delta 0 + 1), prefix 80, fingerprint of 3
        "e907" +
        "00" +
        "02" +
        "02" +
        "01".repeat(16) +
        "02".repeat(16) + // wall 2000, ids
        "00" +
        "00" +
        "03" +
        "01" +
        "03".repeat(16), // infinity, need
    );
    expect(decodeMessage(hexToBytes(hex))).toEqual(sample);
  });

  it("malformed bodies are refused as a whole frame: bounds not ascending, infinity with a prefix or not last, long prefixes, unknown modes, ids out of order, counts over the limits", () => {
    const bound = (w: Writer, delta: number, prefix = none) => w.varint(delta).bytes(prefix);
    const cases: Array<[string, Uint8Array]> = [
      ["equal bounds", frame((w) => bound(bound(w.varint(2), 6).byte(0), 1).byte(0))],
      ["a bound at the lowest point", frame((w) => bound(w.varint(1), 1).byte(0))],
      [
        "a prefix equal after zero padding",
        frame((w) => bound(bound(w.varint(2), 6, Uint8Array.of(5)).byte(0), 1, Uint8Array.of(5, 0)).byte(0)),
      ],
      ["infinity with a prefix", frame((w) => bound(w.varint(1), 0, Uint8Array.of(1)).byte(0))],
      ["a range after infinity", frame((w) => bound(bound(w.varint(2), 0).byte(0), 6).byte(0))],
      ["a prefix of 17 bytes", frame((w) => bound(w.varint(1), 6, new Uint8Array(17)).byte(0))],
      ["mode 4", frame((w) => bound(w.varint(1), 6).byte(4))],
      ["ids not ascending", frame((w) => bound(w.varint(1), 6).byte(2).varint(2).raw(id(2)).raw(id(1)))],
      ["duplicate ids", frame((w) => bound(w.varint(1), 6).byte(3).varint(2).raw(id(2)).raw(id(2)))],
      [
        "a wall delta beyond 2^53",
        frame((w) =>
          w
            .varint(1)
            .varint(2n ** 53n + 1n)
            .bytes(none)
            .byte(0),
        ),
      ],
      ["walls that add up beyond 2^53", frame((w) => bound(bound(w.varint(2), 2 ** 53 - 1).byte(0), 10).byte(0))],
      [
        "ids over the limit",
        frame((w) =>
          bound(w.varint(1), 6)
            .byte(2)
            .varint(L.recon2_max_ids + 1)
            .raw(new Uint8Array(16 * (L.recon2_max_ids + 1))),
        ),
      ],
      ["ranges over the limit", frame((w) => w.varint(L.recon2_max_ranges + 1).raw(new Uint8Array(3 * (L.recon2_max_ranges + 1))))],
      ["a truncated fingerprint", frame((w) => bound(w.varint(1), 6).byte(1).varint(1).raw(new Uint8Array(15)))],
      ["trailing bytes", frame((w) => bound(w.varint(1), 6).byte(0).byte(0))],
    ];
    for (const [what, f] of cases) expect([what, decodeMessage(f)]).toEqual([what, null]);
    // The well-formed neighbours of these cases decode.
    expect(
      decodeMessage(frame((w) => bound(bound(w.varint(2), 6, Uint8Array.of(5)).byte(0), 1, Uint8Array.of(5, 1)).byte(0))),
    ).not.toBeNull();
    expect(decodeMessage(frame((w) => w.varint(0)))).toEqual({ type: "reconcile2", collection: "c", ranges: [] });
  });
});

describe("recon2: decodeMessage is fail-closed on reconcile2 (fuzz, fixed seed)", () => {
  const never = (bytes: Uint8Array) => {
    let out: unknown;
    expect(() => (out = decodeMessage(bytes))).not.toThrow();
    return out as Message | null;
  };

  /** Valid messages: walls that strictly ascend, any prefix, any mode, ids ascending; maybe closed by infinity. */
  const validMessage = fc
    .tuple(
      fc.array(
        fc.record({
          step: fc.integer({ min: 1, max: 5000 }),
          prefix: fc.uint8Array({ maxLength: 16 }),
          mode: fc.constantFrom("skip" as const, "fingerprint" as const, "ids" as const, "need" as const),
          count: fc.nat(),
          ids: fc.uniqueArray(fc.uint8Array({ minLength: 16, maxLength: 16 }), { maxLength: 4, selector: bytesToHex }),
        }),
        { maxLength: 12 },
      ),
      fc.boolean(),
    )
    .map(([specs, toInfinity]): Reconcile2 => {
      let wall = 0;
      const ranges = specs.map((s, i): Range2 => {
        wall += s.step;
        const upper: Bound = toInfinity && i === specs.length - 1 ? INFINITE_BOUND : { wall, prefix: s.prefix };
        if (s.mode === "fingerprint") return { upper, mode: "fingerprint", count: s.count, fingerprint: id(7) };
        if (s.mode === "skip") return { upper, mode: "skip" };
        return { upper, mode: s.mode, ids: [...s.ids].sort((a, b) => (bytesToHex(a) < bytesToHex(b) ? -1 : 1)) };
      });
      return { type: "reconcile2", collection: "notes", ranges };
    });

  it("valid messages round-trip", () => {
    fc.assert(
      fc.property(validMessage, (m) => {
        expect(decodeMessage(encodeMessage(m))).toEqual(m);
      }),
      { seed: 80, numRuns: 300 },
    );
  });

  it("random bodies after a reconcile2 header never throw, and what decodes re-encodes to itself", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (body) => {
        const framed = new Uint8Array(body.length + 3);
        framed.set([MAGIC, 2, 8]);
        framed.set(body, 3);
        const m = never(framed);
        if (m) expect(bytesToHex(encodeMessage(m))).toBe(bytesToHex(framed));
      }),
      { seed: 81, numRuns: 1500 },
    );
  });

  it("corruptions and truncations of valid reconcile2 frames return a message or null, never throw", () => {
    fc.assert(
      fc.property(
        validMessage,
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
        fc.nat(),
        (m, flips, cut) => {
          const f = encodeMessage(m);
          const g = f.slice();
          for (const [i, b] of flips) g[i % g.length] = b;
          never(g);
          never(f.subarray(0, cut % (f.length + 1)));
          expect(decodeMessage(f.subarray(0, f.length - 1))).toBeNull();
        },
      ),
      { seed: 82, numRuns: 800 },
    );
  });

  it("huge counts and walls return null quickly", () => {
    expect(never(frame((w) => w.varint(2n ** 63n)))).toBeNull();
    expect(never(frame((w) => w.varint(1).varint(2n ** 63n)))).toBeNull();
    expect(
      never(
        frame((w) =>
          w
            .varint(1)
            .varint(5)
            .bytes(none)
            .byte(2)
            .varint(2n ** 40n),
        ),
      ),
    ).toBeNull();
  });
});
