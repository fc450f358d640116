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

  it("the fast path (strings without surrogates, no intermediate arrays) gives the text of the plain definition, and refuses what it refuses (fuzz)", () => {
    /** RFC 8785 written plainly: the reference the faster canonicalize is held to. */
    const plain = (value: unknown): string => {
      if (typeof value === "string") {
        if (/\p{Surrogate}/u.test(value.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ""))) throw new JcsError("lone surrogate");
        return JSON.stringify(value);
      }
      if (typeof value === "number") {
        if (!Number.isFinite(value)) throw new JcsError("not finite");
        return JSON.stringify(value);
      }
      if (typeof value === "boolean") return String(value);
      if (value === null) return "null";
      if (value === undefined) throw new JcsError("no JSON form");
      if (Array.isArray(value)) return `[${value.map(plain).join(",")}]`;
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj)
        .filter((k) => obj[k] !== undefined)
        .sort();
      return `{${keys.map((k) => `${plain(k)}:${plain(obj[k])}`).join(",")}}`;
    };
    const outcome = (f: (v: unknown) => string, v: unknown) => {
      try {
        return f(v);
      } catch (e) {
        return e instanceof JcsError ? "refused" : `threw ${e}`;
      }
    };
    // Strings of any UTF-16 code units, lone surrogates included, in keys and values.
    const anyString = fc.string({ unit: "binary" });
    const value = fc.letrec((tie) => ({
      v: fc.oneof(
        { depthSize: "small" },
        anyString,
        fc.double(),
        fc.boolean(),
        fc.constant(null),
        fc.constant(undefined),
        fc.array(tie("v").filter((x) => x !== undefined)),
        fc.dictionary(anyString, tie("v")),
      ),
    })).v;
    fc.assert(
      fc.property(value, (v) => {
        expect(outcome(canonicalize, v)).toBe(outcome(plain, v));
      }),
      { seed: 35, numRuns: 2_000 },
    );
  });
});
