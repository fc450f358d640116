// Client JSON ("500s"): every decoder of a client's JSON answers a refusal, never a
// throw: nesting depth bounded on the raw text, lone surrogates refused, base64url of a length no
// encoding has refused. Fuzzed at a fixed seed with the inputs that used to be 500s.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import "../../helpers/fast-check-seed";
import { jsonNestsDeeper, parseClientJson } from "../../../shared/client-json";
import { base64urlEncode, utf8Encode } from "../../../shared/encoding";
import { COMMON_LIMITS } from "../../../shared/limits";
import { carryGrant, checkCarryGrant, LINK, readCarryRecord } from "../../../shared/minca/carry";
import { decodeInvite, encodeInvite } from "../../../shared/minca/invite";
import { readVersionsBody } from "../../../server/minca/host-wire";
import { bodyKeyOf, carrySpace } from "../../../shared/minca/space";
import type { Version } from "../../../shared/minca/version";
import { newAccount, writeVersion } from "../../../clients/minca/host";

const HOST = "did:key:zDnaeyrPwbZxpDVLsnvAvAEGYazWB2ZrM7QL4Qb1JPzfiYpKy";
const nest = (n: number, open = "[", close = "]") => `${open.repeat(n)}${close.repeat(n)}`;
/** JSON text with a lone surrogate escape in a string: what JSON.stringify writes for one. */
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));

describe("client JSON has a documented nesting bound, checked on the raw text", () => {
  it(`nesting up to max_json_depth (${COMMON_LIMITS.max_json_depth}) is read; one level deeper is refused before parsing`, () => {
    const max = COMMON_LIMITS.max_json_depth;
    expect(parseClientJson(nest(max)).ok).toBe(true);
    expect(parseClientJson(nest(max + 1))).toEqual({ ok: false, reason: `JSON nests deeper than ${max} levels` });
    expect(parseClientJson(`[${nest(3_355, '{"a":', "}").replace(/\{"a":\}/, "1")}]`).ok).toBe(false);
    expect(parseClientJson(nest(1_000_000)).ok).toBe(false);
    // brackets inside strings (escaped quotes too) do not count
    expect(jsonNestsDeeper(JSON.stringify({ s: `\\"${"[".repeat(1_000)}` }), 2)).toBe(false);
    expect(parseClientJson("[1,").ok).toBe(false);
  });

  it("a string or a member name with a lone surrogate is refused (I-JSON); a surrogate pair is fine", () => {
    expect(parseClientJson('["\\ud83d\\ude00"]').ok).toBe(true);
    expect(parseClientJson('["\\ud83d"]').ok).toBe(false);
    expect(parseClientJson('{"\\udc00":1}').ok).toBe(false);
    expect(parseClientJson('[[[{"a":["x\\udfff"]}]]]').ok).toBe(false);
  });

  it("a lone surrogate is refused however the text carries it: raw in the text, or escaped in either case (fuzz)", () => {
    const escaped = (c: string, upper: boolean) => {
      const hex = c.charCodeAt(0).toString(16);
      return `\\u${upper ? hex.toUpperCase() : hex}`;
    };
    fc.assert(
      fc.property(fc.jsonValue(), loneSurrogate, fc.boolean(), fc.constantFrom("raw", "escaped", "key"), (v, lone, upper, how) => {
        const text =
          how === "raw"
            ? `[${JSON.stringify(v)},"a${lone}b"]`
            : how === "escaped"
              ? `[${JSON.stringify(v)},"a${escaped(lone, upper)}b"]`
              : `{"${escaped(lone, upper)}":${JSON.stringify(v)}}`;
        expect(parseClientJson(text)).toEqual({ ok: false, reason: "a string holds a lone surrogate (not I-JSON)" });
        // The same text with the surrogate paired is read.
        const pair = lone.charCodeAt(0) < 0xdc00 ? `${lone}\udc00` : `\ud800${lone}`;
        expect(parseClientJson(`[${JSON.stringify(v)},${JSON.stringify(`a${pair}b`)}]`).ok).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it("fuzz: parseClientJson never throws, and what it accepts nests within the bound and has no lone surrogate", () => {
    const deep = fc.integer({ min: 0, max: 5_000 }).map((n) => nest(n));
    const withSurrogate = fc.tuple(fc.jsonValue(), loneSurrogate).map(([v, s]) => JSON.stringify([v, s]));
    fc.assert(
      fc.property(fc.oneof(fc.json(), fc.string(), deep, withSurrogate), (text) => {
        const r = parseClientJson(text);
        if (r.ok) expect(jsonNestsDeeper(JSON.stringify(r.value), COMMON_LIMITS.max_json_depth)).toBe(false);
        // JSON.stringify writes a lone surrogate as an escape, a pair as itself
        if (r.ok) expect(JSON.stringify(r.value)).not.toMatch(/\\ud[89a-f][0-9a-f]{2}/i);
      }),
      { numRuns: 400 },
    );
  });

  it("fuzz: readVersionsBody answers a refusal, never a throw, for deep, surrogate-laden and random bodies", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.json(),
          fc.integer({ min: 60, max: 4_000 }).map((n) => `[${nest(n)}]`),
          fc.tuple(fc.jsonValue(), loneSurrogate).map(([v, s]) => JSON.stringify([{ v, s }])),
        ),
        (text) => {
          const r = readVersionsBody(text);
          expect(typeof r.ok).toBe("boolean");
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("invites, grants and links refuse instead of throwing", () => {
  it("fuzz: an invite whose JSON holds a lone surrogate anywhere is refused, never thrown", async () => {
    const acct = await newAccount();
    const carry = carrySpace(acct.accountKey, acct.root.did, HOST, 0);
    const inner = JSON.parse(Buffer.from(encodeInvite(carry), "base64url").toString("utf8"));
    await fc.assert(
      fc.asyncProperty(loneSurrogate, fc.constantFrom("nonce", "founder", "space", "key"), async (s, where) => {
        const copy = structuredClone(inner);
        if (where === "nonce") copy.constitution.nonce += s;
        else if (where === "founder") copy.constitution.founders[0] += s;
        else if (where === "space") copy.space += s;
        else copy.key = s;
        const invite = base64urlEncode(utf8Encode(JSON.stringify(copy)));
        expect(decodeInvite(invite).ok).toBe(false);
        const grant = carryGrant({ account: acct.root.did, carrySpace: carry, invite });
        expect(checkCarryGrant(grant, HOST).ok).toBe(false);
      }),
      { numRuns: 100 },
    );
  });

  it("fuzz: a link blob of any length and alphabet is read or refused (unreadable_record), never thrown", async () => {
    const acct = await newAccount();
    const carry = carrySpace(acct.accountKey, acct.root.did, HOST, 0);
    const bk = bodyKeyOf(carry.key!);
    const until = 2_000_000_000;
    expect(
      readCarryRecord(
        (await writeVersion(acct, carry, { collection: LINK, key: "l", body: { v: 1, blob: "AAAAA", until } })) as Version,
        bk,
      ),
    ).toMatchObject({
      kind: "refused",
      reason: "unreadable_record",
    });
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: fc.constantFrom(..."ABCDEFabcdef0123456789-_=+/".split("")), maxLength: 41 }), async (blob) => {
        const v = (await writeVersion(acct, carry, { collection: LINK, key: "l", body: { v: 1, blob, until } })) as Version;
        const rec = readCarryRecord(v, bk);
        if (blob.length % 4 === 1 || /[=+/]/.test(blob) || blob === "") expect(rec.kind).toBe("refused");
      }),
      { numRuns: 60 },
    );
  });
});
