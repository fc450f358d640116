// The Passnote protocol, "Frame encoding": varints by arithmetic so 64-bit values survive JavaScript, and the
// compact tagged value encoding (null, bool, int, double, string, list, map).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Double, Reader, Writer, decodeValue, encodeValue, type Value } from "../../../../../clients/passnote/protocol/codec";
import { decodeMessage, encodeMessage } from "../../../../../clients/passnote/protocol/wire";
import { formatHlc } from "../../../../../clients/passnote/protocol/hlc";
import { bytesToHex } from "../../../../../shared/encoding";

const varint = (v: number | bigint) => bytesToHex(new Writer().varint(v).finish());

describe("the Passnote protocol: varints by arithmetic", () => {
  it("known encodings (LEB128)", () => {
    expect(varint(0)).toBe("00");
    expect(varint(127)).toBe("7f");
    expect(varint(128)).toBe("8001");
    expect(varint(300)).toBe("ac02");
    expect(varint(2 ** 32)).toBe("8080808010");
    expect(varint(2n ** 64n - 1n)).toBe("ffffffffffffffffff01");
  });

  it("64-bit values survive: every bigint below 2^64 round-trips exactly", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), (v) => {
        const r = new Reader(new Writer().varint(v).finish());
        expect(r.varint64()).toBe(v);
        expect(r.done()).toBe(true);
      }),
      { seed: 1, numRuns: 300 },
    );
  });

  it("values above 2^53 are not rounded (2^53 + 1 stays odd)", () => {
    const v = 2n ** 53n + 1n;
    expect(new Reader(new Writer().varint(v).finish()).varint64()).toBe(v);
    expect(decodeValue(encodeValue(v))?.value).toBe(v);
    expect(decodeValue(encodeValue(-(2n ** 63n)))?.value).toBe(-(2n ** 63n));
  });

  it("overlong, beyond-64-bit and unterminated varints are malformed", () => {
    for (const hex of ["8000", "ffffffffffffffffff02", "ffffffffffffffffffff01", "80"]) {
      const bytes = Uint8Array.from(hex.match(/../g)!.map((h) => parseInt(h, 16)));
      expect(() => new Reader(bytes).varint64()).toThrow();
    }
  });
});

/** Well-formed strings, a quarter of them with a leading U+FEFF (which must survive). */
const bomString = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: "grapheme" }) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme" }).map((s) => "\uFEFF" + s) },
);

/** Strings holding at least one lone surrogate (which must be refused when written). */
const loneSurrogateString = fc
  .tuple(fc.string(), fc.integer({ min: 0xd800, max: 0xdfff }), fc.string(), fc.boolean())
  .map(
    ([a, c, b, bom]) =>
      (bom ? "\uFEFF" : "") + a.replace(/[\uD800-\uDFFF]/g, "") + String.fromCharCode(c) + b.replace(/[\uD800-\uDFFF]/g, ""),
  );

const valueArb: fc.Arbitrary<Value> = fc.letrec<{ v: Value }>((tie) => ({
  v: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc
      .bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })
      .filter((b) => b > BigInt(Number.MAX_SAFE_INTEGER) || b < BigInt(Number.MIN_SAFE_INTEGER)),
    fc.double({ noNaN: true }).filter((d) => !Number.isSafeInteger(d)),
    bomString,
    fc.array(tie("v"), { maxLength: 5 }),
    fc.dictionary(bomString, tie("v"), { maxKeys: 5 }),
  ),
})).v;

describe("the Passnote protocol: tagged values", () => {
  it("null, bool, int, double, string, list and map round-trip", () => {
    fc.assert(
      fc.property(valueArb, (v) => {
        expect(decodeValue(encodeValue(v))).toEqual({ value: v });
      }),
      { seed: 2, numRuns: 300 },
    );
  });

  it("strings round-trip exactly: a leading U+FEFF survives, as a value and as a map key", () => {
    expect(decodeValue(encodeValue("\uFEFFk"))).toEqual({ value: "\uFEFFk" });
    expect(decodeValue(encodeValue({ "\uFEFFk": "\uFEFF" }))).toEqual({ value: { "\uFEFFk": "\uFEFF" } });
    expect(new Reader(new Writer().string("\uFEFF\uFEFF").finish()).string()).toBe("\uFEFF\uFEFF");
  });

  it("lone surrogates are refused when written, never turned into U+FFFD", () => {
    fc.assert(
      fc.property(loneSurrogateString, (s) => {
        expect(() => encodeValue(s)).toThrow(RangeError);
        expect(() => encodeValue({ [s]: 1 })).toThrow(RangeError);
        expect(() => new Writer().string(s)).toThrow(RangeError);
      }),
      { seed: 3, numRuns: 300 },
    );
  });

  it("a map key named __proto__ stays a plain key", () => {
    const v = JSON.parse('{"__proto__":{"polluted":true}}');
    const back = decodeValue(encodeValue(v))!.value as Record<string, Value>;
    expect(Object.keys(back)).toEqual(["__proto__"]);
    expect(({} as any).polluted).toBeUndefined();
  });

  it("duplicate map keys, unknown tags, trailing bytes and nesting beyond 32 levels are malformed", () => {
    const dup = new Writer().byte(7).varint(2).string("a").byte(0).string("a").byte(0).finish();
    expect(decodeValue(dup)).toBeNull();
    expect(decodeValue(Uint8Array.of(9))).toBeNull();
    expect(decodeValue(Uint8Array.of(0, 0))).toBeNull();
    const deep = new Uint8Array(34 * 2 + 1);
    for (let i = 0; i < 34; i++) deep.set([6, 1], i * 2);
    expect(decodeValue(deep)).toBeNull();
    let ok: Value = null;
    for (let i = 0; i < 32; i++) ok = [ok];
    expect(decodeValue(encodeValue(ok))).toEqual({ value: ok });
  });
});

describe("the Passnote protocol: tagged values keep their type (double stays double)", () => {
  const doubleBytes = (x: number) => {
    const b = new Uint8Array(9);
    b[0] = 4; // the double tag
    new DataView(b.buffer).setFloat64(1, x, true);
    return b;
  };

  it("tagged values: a whole-number double (2.0) from another implementation is re-encoded as a double when this peer relays it", () => {
    for (const x of [2, 0, -7, 1e15, 2 ** 53 - 1]) {
      const decoded = decodeValue(doubleBytes(x))!.value;
      expect(decoded).toBeInstanceOf(Double);
      expect(Number(decoded)).toBe(x);
      expect(bytesToHex(encodeValue(decoded))).toBe(bytesToHex(doubleBytes(x)));
    }
    // Inside a delta, as a relaying peer decodes and re-encodes it.
    const hlc = formatHlc({ wall: 1_000, counter: 0, node: "x" });
    const frame = encodeMessage({
      type: "delta",
      collection: "c",
      records: [{ key: "k", value: { n: new Double(2), list: [new Double(3), 2.5, 4] }, is_deleted: false, hlc }],
    });
    const relayed = encodeMessage(decodeMessage(frame)!);
    expect(bytesToHex(relayed)).toBe(bytesToHex(frame));
  });

  it("tagged values: an application writes new Double(2) to send a whole number as a double; plain 2 is an int, 2.5 a double", () => {
    expect(encodeValue(new Double(2))).toEqual(doubleBytes(2));
    expect(encodeValue(2)[0]).toBe(3);
    expect(encodeValue(2.5)).toEqual(doubleBytes(2.5));
    expect(decodeValue(doubleBytes(2.5))).toEqual({ value: 2.5 });
    expect(JSON.stringify({ n: new Double(2) })).toBe('{"n":2}');
  });

  /** Any value another implementation may send, doubles of every kind (whole, -0, NaN, infinities) included. */
  const wireValueArb: fc.Arbitrary<Value> = fc.letrec<{ v: Value }>((tie) => ({
    v: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      fc.constant(null),
      fc.boolean(),
      fc.integer(),
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
      fc.double().map((d) => new Double(d)),
      fc.integer({ min: -1_000_000, max: 1_000_000 }).map((d) => new Double(d)),
      fc.string(),
      fc.array(tie("v"), { maxLength: 5 }),
      fc.dictionary(fc.string(), tie("v"), { maxKeys: 5 }),
    ),
  })).v;

  it("fuzz: every encoded value decodes and re-encodes to the same bytes, doubles included (the type of each item survives a relay)", () => {
    fc.assert(
      fc.property(wireValueArb, (v) => {
        let bytes: Uint8Array;
        try {
          bytes = encodeValue(v);
        } catch (e) {
          expect(e).toBeInstanceOf(RangeError); // a lone surrogate: refused when written
          return;
        }
        const decoded = decodeValue(bytes);
        expect(decoded).not.toBeNull();
        expect(bytesToHex(encodeValue(decoded!.value))).toBe(bytesToHex(bytes));
      }),
      { numRuns: 500 },
    );
  });
});
