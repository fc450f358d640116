import fc from "fast-check";
import { describe, expect, it } from "vitest";
import vectors from "../../../fixtures/jcs-rfc8785.vectors.json";
import { canonicalize, JcsError } from "../../../../shared/minca/jcs";

const fromHex = (h: string) => new DataView(Uint8Array.from(h.match(/../g)!.map((b) => parseInt(b, 16))).buffer).getFloat64(0);

describe("JCS (RFC 8785)", () => {
  it("canonicalises the RFC's sample documents byte for byte", () => {
    for (const d of vectors.documents) expect(canonicalize(JSON.parse(d.input))).toBe(d.output);
  });

  it("serialises numbers as the RFC's Appendix B samples", () => {
    for (const [hex, out] of vectors.numbers) expect(canonicalize(fromHex(hex))).toBe(out);
  });

  it("refuses NaN and Infinity, lone surrogates and values JSON cannot hold", () => {
    for (const hex of vectors.errors) expect(() => canonicalize(fromHex(hex))).toThrow(JcsError);
    expect(() => canonicalize("\ud800")).toThrow(JcsError);
    expect(() => canonicalize({ a: 1n })).toThrow(JcsError);
    expect(() => canonicalize(new Date())).toThrow(JcsError);
  });

  it("is the same text for the same value whatever the member order, and parses back to it", () => {
    fc.assert(
      fc.property(fc.jsonValue({ noUnicodeString: false }), (v) => {
        const text = canonicalize(v);
        const shuffled = JSON.parse(JSON.stringify(v), (_k, x) =>
          x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).reverse()) : x,
        );
        expect(canonicalize(shuffled)).toBe(text);
        expect(canonicalize(JSON.parse(text))).toBe(text);
      }),
      { numRuns: 200 },
    );
  });
});
