import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { lostMember, rawMember, skipString, withRawMember } from "../../../shared/json-raw";

describe("rawMember", () => {
  it("returns a member's exact text, whitespace and number forms included", () => {
    const text = '{ "type" : "x", "envelope" : {"a":1.50,"b":"\\u00e9","c":[1, 2]} , "z": true }';
    expect(rawMember(text, "envelope")).toBe('{"a":1.50,"b":"\\u00e9","c":[1, 2]}');
    expect(rawMember(text, "type")).toBe('"x"');
    expect(rawMember(text, "z")).toBe("true");
    expect(rawMember(text, "missing")).toBeUndefined();
  });

  it("is not fooled by braces and quotes inside strings", () => {
    const text = '{"s":"}{\\"][","envelope":{"k":"\\"}"}}';
    expect(rawMember(text, "envelope")).toBe('{"k":"\\"}"}');
  });

  it("takes the last of duplicate keys, as JSON.parse does", () => {
    expect(rawMember('{"e":1,"e":{"x":2}}', "e")).toBe('{"x":2}');
  });

  it("returns undefined for a top level that is not an object", () => {
    expect(rawMember("[1]", "a")).toBeUndefined();
    expect(rawMember('"s"', "a")).toBeUndefined();
  });

  it("fuzz: for any JSON object, the raw member parses to the parsed member", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.integer({ min: 0, max: 3 }), (obj, spaces) => {
        const text = JSON.stringify(obj, null, spaces);
        for (const key of Object.keys(obj)) {
          const raw = rawMember(text, key);
          expect(raw).toBeDefined();
          expect(JSON.parse(raw!)).toEqual(JSON.parse(JSON.stringify(obj[key])));
        }
      }),
      { seed: 42, numRuns: 300 },
    );
  });
});

describe("withRawMember", () => {
  it("adds a member and keeps every other byte", () => {
    expect(withRawMember('{"a":1.50}', "q", "t", false)).toBe('{"a":1.50,"q":"t"}');
    expect(withRawMember("{ }", "q", 1, false)).toBe('{ "q":1}');
  });
  it("leaves an object that already has the member unchanged", () => {
    expect(withRawMember('{"q":"mine"}', "q", "t", true)).toBe('{"q":"mine"}');
  });
});

describe("lostMember", () => {
  it("finds no member lost in any JSON text JSON.stringify makes (fuzz), and never throws on whitespace and escapes", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom("", " ", "\n\t"), (j, ws) => {
        const text = JSON.stringify(j, null, ws);
        const hasProto = /"__proto__"\s*:/.test(text);
        expect(lostMember(text, JSON.parse(text)) === null).toBe(!hasProto);
      }),
      { seed: 1606, numRuns: 500 },
    );
  });

  it("a repeated name or __proto__ (escaped or not, however deep) is a lost member", () => {
    for (const t of ['{"a":1,"a":2}', '[{"x":{"__proto__":1}}]', '{"\\u005f_proto__":{}}', '{"a":{"b":1,"b":1}}']) {
      expect(lostMember(t, JSON.parse(t)), t).not.toBeNull();
    }
    for (const t of ['{"a":"b:c","d":["e:f"]}', '"::"', "[]", '{"a\\"":1}']) expect(lostMember(t, JSON.parse(t)), t).toBeNull();
  });
});

describe("skipString finds a string's end natively", () => {
  it("ends where a character-by-character scan ends, for any text of quotes, backslashes and letters (fuzz)", () => {
    /** The definition: a backslash escapes the next character; an unescaped quote ends the string. */
    const plain = (s: string, i: number): number => {
      for (i++; i < s.length; ) {
        const c = s[i];
        if (c === "\\") i += 2;
        else if (c === '"') return i + 1;
        else i++;
      }
      return -1;
    };
    const end = (s: string) => {
      try {
        return skipString(s, 0);
      } catch {
        return -1;
      }
    };
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('"', "\\", "a", "u") }), (tail) => {
        const s = `"${tail}`;
        expect(end(s)).toBe(plain(s, 0));
      }),
      { seed: 35, numRuns: 2_000 },
    );
    // Every string JSON.stringify makes ends at its closing quote.
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (v) => {
        const s = `${JSON.stringify(v)},"next"`;
        expect(end(s)).toBe(JSON.stringify(v).length);
      }),
      { seed: 35, numRuns: 500 },
    );
  });
});
