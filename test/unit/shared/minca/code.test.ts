import fc from "fast-check";
import { describe, expect, it } from "vitest";
import vectors from "../../../fixtures/minca-code.vectors.json";
import { base64urlEncode } from "../../../../shared/encoding";
import {
  CodeError,
  codeFromSecret,
  codeLink,
  codeRoom,
  codeSecret,
  connectPage,
  isRoomId,
  newCode,
  readCode,
} from "../../../../shared/minca/code";

describe("the Minca protocol section 3: the code and the link", () => {
  it("the room for a code is the Minca protocol's vector", () => {
    for (const v of vectors.room) {
      expect(codeRoom(codeSecret(v.code))).toBe(v.room);
      expect(isRoomId(v.room)).toBe(true);
      expect(codeLink("home.example", v.code)).toBe(v.link);
      expect(codeLink("https://home.example/connect", v.code)).toBe(v.link);
    }
  });

  it("a code is mc_ and 22 base64url characters of 16 fresh bytes, new each time", () => {
    const codes = new Set(Array.from({ length: 64 }, newCode));
    expect(codes.size).toBe(64);
    for (const c of codes) {
      expect(c).toMatch(/^mc_[A-Za-z0-9_-]{22}$/);
      expect(codeSecret(c).length).toBe(16);
    }
  });

  it("a home's address is its bare domain's /connect (the Minca protocol §2.2)", () => {
    expect(connectPage("minca.example.com")).toBe("https://minca.example.com/connect");
    expect(connectPage("http://127.0.0.1:9999/anything?x#y")).toBe("http://127.0.0.1:9999/connect");
  });

  it("reads the first code not followed by another base64url character, from a link or typed text", () => {
    const code = vectors.room[0].code;
    expect(readCode(vectors.room[0].link)).toBe(code);
    expect(readCode(`the code is ${code}.`)).toBe(code);
    expect(readCode(`${code}A`)).toBeNull(); // followed by another base64url character
    expect(readCode(`mc_${"A".repeat(23)} ${code}`)).toBe(code); // a longer run is no match
    expect(readCode(`mc_AAAAAAAAAAAAAAAAAAAAAB ${code}`)).toBe(code); // nor one that is not 16 bytes
    expect(readCode(`x ${code} mc_AAAAAAAAAAAAAAAAAAAAAA`)).toBe(code);
    // 22 characters whose last carries bits beyond 16 bytes do not decode to 16 bytes.
    expect(readCode("mc_AAAAAAAAAAAAAAAAAAAAAB")).toBeNull();
    expect(readCode("no code here")).toBeNull();
  });

  it("fuzz: reading a code from any text never throws, and what it returns decodes to 16 bytes", () => {
    const alphabet = fc.constantFrom(..."mc_AZaz09-_ #/.QqEe".split(""));
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.array(alphabet, { maxLength: 60 }).map((a) => a.join("")),
        ),
        (s) => {
          const got = readCode(s);
          if (got !== null) expect(codeSecret(got).length).toBe(16);
        },
      ),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), fc.string(), (secret, prefix) => {
        const code = codeFromSecret(secret);
        expect(readCode(`${prefix.replace(/mc_/g, "")} ${code}`)).toBe(code);
        expect(codeSecret(code)).toEqual(secret);
      }),
      { numRuns: 200 },
    );
  });

  it("fuzz: codeSecret refuses anything but a well-formed code with CodeError", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (s) => {
        try {
          expect(codeSecret(s).length).toBe(16);
        } catch (e) {
          expect(e).toBeInstanceOf(CodeError);
        }
      }),
      { numRuns: 500 },
    );
    expect(() => codeSecret("mc_" + base64urlEncode(new Uint8Array(15)))).toThrow(CodeError);
  });
});
