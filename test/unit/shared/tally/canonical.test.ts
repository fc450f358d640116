import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { canonicalJson, innerDigestHex } from "../../../../shared/tally/canonical";

const NPUB = "npub180cvv07tjdrrgpa0j7j7tmnyl2yr6yr7l8j4s3evf6u64th6gkwsyjh6w6";
const inner = {
  type: "transaction_created",
  id: "m-1",
  to_user_id: NPUB,
  from_user_id: NPUB,
  payload: { z: [1, true, null, { b: 2, a: 1 }], note: "café ☕", amount: 1250 },
  created_at: "2026-01-02T03:04:05.000Z",
};

describe("§3.3 canonical JSON", () => {
  it("§3.3: keys are sorted at every depth and no whitespace is written", () => {
    expect(canonicalJson(inner)).toBe(
      '{"created_at":"2026-01-02T03:04:05.000Z","from_user_id":"' +
        NPUB +
        '","id":"m-1",' +
        '"payload":{"amount":1250,"note":"café ☕","z":[1,true,null,{"a":1,"b":2}]},' +
        '"to_user_id":"' +
        NPUB +
        '","type":"transaction_created"}',
    );
  });

  it("§3.3: the digest matches one computed by an independent implementation (Python json + hashlib)", () => {
    // python: json.dumps(inner, sort_keys=True, separators=(',',':'), ensure_ascii=False) → sha256
    expect(innerDigestHex(inner)).toBe("c3fe16a504b32336022f2d76c218d28a2cf6fdcd6c6989a63617e106ee85b4b2");
  });

  it("§3.3: the digest ignores signature and proof, and nothing else", () => {
    const d = innerDigestHex(inner);
    expect(innerDigestHex({ ...inner, signature: "ab".repeat(64) })).toBe(d);
    expect(innerDigestHex({ ...inner, proof: { type: "x" } })).toBe(d);
    expect(innerDigestHex({ ...inner, extra: 1 })).not.toBe(d);
    expect(innerDigestHex({ ...inner, id: "m-2" })).not.toBe(d);
  });

  it("keys are ordered by UTF-16 code unit (default JS sort), not by code point or numerically", () => {
    expect(canonicalJson({ "\uFF21": 1, "😀": 2, a: 3, B: 4 })).toBe('{"B":4,"a":3,"😀":2,"Ａ":1}');
    expect(canonicalJson({ 9: "n", 10: "t", a: 0 })).toBe('{"10":"t","9":"n","a":0}');
  });

  it("undefined-valued keys are omitted; undefined in arrays is null (as JSON.stringify)", () => {
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(canonicalJson([1, undefined, 2])).toBe("[1,null,2]");
  });

  it("strings and numbers are written as JSON.stringify writes them", () => {
    expect(canonicalJson({ s: 'q"\\\n\u0001\uD800', n: [-0, 1e21, 0.1, -5] })).toBe(
      '{"n":[0,1e+21,0.1,-5],"s":"q\\"\\\\\\n\\u0001\\ud800"}',
    );
    expect(canonicalJson(new Date(0))).toBe('"1970-01-01T00:00:00.000Z"');
  });

  it("non-finite numbers, bigint, functions, symbols and cycles throw", () => {
    for (const v of [NaN, Infinity, -Infinity]) expect(() => canonicalJson({ a: v })).toThrow();
    expect(() => canonicalJson({ a: 1n })).toThrow();
    expect(() => canonicalJson({ a: () => 1 })).toThrow();
    expect(() => canonicalJson([Symbol("x")])).toThrow();
    const cyc: Record<string, unknown> = {};
    cyc.self = cyc;
    expect(() => canonicalJson(cyc)).toThrow();
    // A shared (non-cyclic) reference is fine.
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
  });

  it("property: the canonical form survives a JSON round trip and parses back to an equal value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const c = canonicalJson(v);
        expect(canonicalJson(JSON.parse(JSON.stringify(v)))).toBe(c);
        expect(JSON.parse(c)).toEqual(JSON.parse(JSON.stringify(v)));
        expect(canonicalJson(JSON.parse(c))).toBe(c); // idempotent
      }),
      { numRuns: 300 },
    );
  });

  it("property: key insertion order does not change the canonical form", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 8 }), (obj) => {
        const reversed = Object.fromEntries(Object.entries(obj).reverse());
        expect(canonicalJson(reversed)).toBe(canonicalJson(obj));
      }),
      { numRuns: 300 },
    );
  });
});
