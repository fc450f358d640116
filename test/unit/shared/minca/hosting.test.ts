// The hosting profile (docs/hosting.md-8.4) and the rules of the Minca protocol §4.1-4.3 a host applies, checked
// on the pure modules: ids, constitutions and space keys, read keys (Ed25519 did:key), invites,
// versions and their gates. Passes, links, carry:closed, CarryGrants and read proofs:
// hosting-carry.test.ts. Every decoder of untrusted input is fuzzed at a fixed seed.
import fc from "fast-check";
import { ed25519 } from "@noble/curves/ed25519.js";
import { describe, expect, it } from "vitest";
import { base64urlEncode, utf8Encode } from "../../../../shared/encoding";
import { newAccount, withNote, writeVersion, makeSpace } from "../../../../clients/minca/host";
import { passBody, passKey } from "../../../../shared/minca/carry";
import { DidKeyError, ed25519DidKey, ed25519FromDidKey, isEd25519DidKey, isP256DidKey } from "../../../../shared/minca/did-key";
import { isMincaId, keyHash, mincaId } from "../../../../shared/minca/id";
import { decodeInvite, encodeInvite } from "../../../../shared/minca/invite";
import { canonicalize } from "../../../../shared/minca/jcs";
import { commandCovers, policyAllows } from "../../../../shared/minca/policy";
import { bodyKeyOf, carrySpace, newSpace, openBody, readSeedOf, sealBody, spaceId } from "../../../../shared/minca/space";
import { checkVersion, versionId, versionBody } from "../../../../shared/minca/version";
import { codeRoom } from "../../../../shared/minca/code";
import { HOST, gate } from "../../../helpers/minca-hosting";

describe("docs/hosting.md: ids, constitutions, space keys and read keys", () => {
  it("ids are b + lowercase unpadded base32 of SHA-256, the shape of code rooms too (one function)", () => {
    const id = mincaId(utf8Encode("x"));
    expect(isMincaId(id)).toBe(true);
    expect(id).toMatch(/^b[a-z2-7]{52}$/);
    // the code room of the Minca protocol §3's vector is computed by the same function
    expect(codeRoom(Buffer.from("eYV4XGMvhkky6OWpPfqfRQ", "base64url"))).toBe("bihn55ne2az53tlealtmk3ervpyk6xa6364ii25ogc7xv54zkjszq");
    expect(keyHash("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a3");
  });

  it("the space hashes to its id: id = id(UTF-8(JCS(constitution)))", () => {
    const s = newSpace({ founders: [HOST], visibility: "private" });
    expect(s.id).toBe(mincaId(utf8Encode(canonicalize(s.constitution))));
    expect(spaceId({ ...s.constitution, nonce: "other" })).not.toBe(s.id);
  });

  it("a private space's readKey is the did:key (multicodec 0xed) of the Ed25519 key seeded by HKDF(space key, minca/read-key/v1)", () => {
    const s = newSpace({ founders: [HOST], visibility: "private" });
    const seed = readSeedOf(s.key!);
    expect(s.constitution.readKey).toBe(ed25519DidKey(ed25519.getPublicKey(seed)));
    expect(s.constitution.readKey!.startsWith("did:key:z6Mk")).toBe(true);
    expect(ed25519FromDidKey(s.constitution.readKey!)).toEqual(ed25519.getPublicKey(seed));
    expect(isEd25519DidKey(HOST)).toBe(false);
    expect(isP256DidKey(s.constitution.readKey)).toBe(false);
    expect(() => ed25519FromDidKey(HOST)).toThrow(DidKeyError);
    // the body key is another one-way derivation: the read seed opens nothing
    const sealed = sealBody(bodyKeyOf(s.key!), { a: 1 });
    expect(openBody(bodyKeyOf(s.key!), sealed)).toEqual({ a: 1 });
    expect(openBody(seed, sealed)).toBeNull();
  });

  it("Ed25519 did:key decoding never throws anything but DidKeyError (fuzz)", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.uint8Array({ maxLength: 40 }).map((b) => `did:key:z${base64urlEncode(b)}`),
        ),
        (s) => {
          try {
            expect(ed25519FromDidKey(s).length).toBe(32);
          } catch (e) {
            expect(e).toBeInstanceOf(DidKeyError);
          }
        },
      ),
      { seed: 901, numRuns: 400 },
    );
  });

  it("the Minca protocol §4.2: every device derives the same carry space from the account key, the carrier's did and gen", () => {
    const key = new Uint8Array(32).fill(7);
    const a = carrySpace(key, HOST, "did:key:zDnaemCBstFw5hzNdNggFHZm6GpHoHqNGrwEtrVi9CxGH9V7E", 0);
    const b = carrySpace(key, HOST, "did:key:zDnaemCBstFw5hzNdNggFHZm6GpHoHqNGrwEtrVi9CxGH9V7E", 0);
    expect(a.id).toBe(b.id);
    expect(a.constitution).toMatchObject({
      visibility: "private",
      founders: [HOST],
      nonce: "carry:did:key:zDnaemCBstFw5hzNdNggFHZm6GpHoHqNGrwEtrVi9CxGH9V7E:0",
    });
    expect(carrySpace(key, HOST, "did:key:zDnaemCBstFw5hzNdNggFHZm6GpHoHqNGrwEtrVi9CxGH9V7E", 1).id).not.toBe(a.id);
    expect(() => carrySpace(key, HOST, HOST, -1)).toThrow();
    expect(() => carrySpace(key, HOST, HOST, 0.5)).toThrow();
  });
});

describe("docs/hosting.md: view-only invites", () => {
  it("round-trips a private space with its key and a public one without", () => {
    for (const vis of ["private", "public"] as const) {
      const s = newSpace({ founders: [HOST], visibility: vis });
      const r = decodeInvite(encodeInvite(s));
      expect(r.ok).toBe(true);
      if (r.ok) expect(r.invite).toEqual({ space: s.id, constitution: s.constitution, ...(s.key ? { key: s.key } : {}) });
    }
  });

  it("an invite whose constitution does not hash to its space is refused; decoding never throws (fuzz)", () => {
    const s = newSpace({ founders: [HOST], visibility: "public" });
    const forged = base64urlEncode(utf8Encode(canonicalize({ v: 1, space: mincaId(utf8Encode("x")), constitution: s.constitution })));
    expect(decodeInvite(forged)).toMatchObject({ ok: false });
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.jsonValue().map((j) => base64urlEncode(utf8Encode(JSON.stringify(j)))),
        ),
        (x) => {
          expect(decodeInvite(x).ok).toBe(false);
        },
      ),
      { seed: 902, numRuns: 400 },
    );
  });
});

describe("docs/hosting.md: versions (id, sig, sealed) and the gates a host applies", () => {
  it("a version's id is the hash of it without id and sig; its sealed body opens only with the body key", async () => {
    const acct = await newAccount();
    const s = makeSpace(acct, "private");
    const v = await writeVersion(acct, s, { collection: "std.message", key: "m1", body: { text: "hi" }, topics: ["t"] });
    expect(v.id).toBe(versionId(v as unknown as Record<string, unknown>));
    expect(v.body).toBeUndefined();
    expect(versionBody(v, bodyKeyOf(s.key!))).toEqual({ text: "hi" });
    expect(versionBody(v)).toBeNull();
    expect(await checkVersion(v, gate(s))).toMatchObject({ ok: true });
    expect(await checkVersion(JSON.parse(JSON.stringify(v)), gate(s))).toMatchObject({ ok: true });
  });

  it("the Minca protocol §4.1: a carrier runs every record through the gates that need no body — each forgery is refused with its reason", async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const s = makeSpace(acct, "public");
    const v = await writeVersion(acct, s, { collection: "std.note", key: "k", body: { a: 1 } });
    const reason = async (x: unknown, g = gate(s)) => {
      const r = await checkVersion(x, g);
      return r.ok ? "accepted" : r.reason;
    };
    expect(await reason({ ...v, body: { a: 2 } })).toBe("id_mismatch");
    const resigned = { ...v, body: { a: 2 } } as Record<string, unknown>;
    resigned.id = versionId(resigned);
    expect(await reason(resigned)).toBe("bad_signature");
    expect(await reason({ ...v, sig: v.sig.slice(0, -2) + "AA" })).toBe("bad_signature");
    expect(await reason(v, gate(makeSpace(acct, "public")))).toBe("wrong_space");
    expect(await reason({ ...v, extra: 1 })).toBe("malformed");
    // a note not rooted at a founder
    expect(await reason(await writeVersion(other, s, { collection: "std.note", key: "k", body: {} }))).toBe("not_founder");
    // a note made out to another key than the author
    const stray = { ...other, note: acct.note };
    expect(await reason(await writeVersion(stray, s, { collection: "c", key: "k" }))).toBe("note_audience");
    // a note for one space does not cover another
    const { sessionNote } = await import("../../../../clients/minca/host");
    const narrow = { ...acct, note: await sessionNote(acct.root, acct.session.did, "/", `space:${mincaId(utf8Encode("elsewhere"))}`) };
    expect(await reason(await writeVersion(narrow, s, { collection: "c", key: "k" }))).toBe("note_subject");
    // a policy that allows another collection only
    const pol = { ...acct, note: await sessionNote(acct.root, acct.session.did, "/", acct.root.did, [["==", ".collection", "std.todo"]]) };
    expect(await reason(await writeVersion(pol, s, { collection: "std.todo", key: "k" }))).toBe("accepted");
    expect(await reason(await writeVersion(pol, s, { collection: "std.note", key: "k" }))).toBe("note_policy");
    // read-only notes write nothing
    expect(await reason(await writeVersion(await withNote(acct, "/record/read"), s, { collection: "c", key: "k" }))).toBe("note_command");
    // bodies in a private space are sealed; a public one's are in the clear
    const priv = makeSpace(acct, "private");
    expect(await reason(await writeVersion(acct, { ...priv, key: undefined }, { collection: "c", key: "k", body: {} }), gate(priv))).toBe(
      "body_in_private_space",
    );
    expect(await reason(await writeVersion(acct, { ...s, key: new Uint8Array(32) }, { collection: "c", key: "k", body: {} }))).toBe(
      "sealed_in_public_space",
    );
  });

  it("a version whose JSON holds a member the schema would drop or rename (__proto__ anywhere, a repeated name) is refused as malformed", async () => {
    const acct = await newAccount();
    const s = makeSpace(acct, "public");
    const check = async (v: unknown) => {
      const raw = JSON.stringify(v);
      const r = await checkVersion(JSON.parse(raw), gate(s), raw.length, raw);
      return r.ok ? "accepted" : r.reason;
    };
    const proto = await writeVersion(acct, s, { collection: "c", key: "k", body: JSON.parse('{"a":1,"__proto__":{"admin":true}}') });
    expect(JSON.stringify(proto)).toContain('"__proto__"');
    expect(await check(proto)).toBe("malformed");
    const deep = await writeVersion(acct, s, { collection: "c", key: "k", body: JSON.parse('{"a":[{"b":{"\\u005f_proto__":1}}]}') });
    expect(await check(deep)).toBe("malformed");
    const plain = await writeVersion(acct, s, { collection: "c", key: "k", body: { a: [{ b: { c: "x:y" } }] } });
    expect(await check(plain)).toBe("accepted");
    // a repeated member: the parsed value keeps the last one, the stored text keeps both
    const raw = JSON.stringify(plain).replace('"collection":"c"', '"collection":"other","collection":"c"');
    const r = await checkVersion(JSON.parse(raw), gate(s), raw.length, raw);
    expect(r).toMatchObject({ ok: false, reason: "malformed", detail: expect.stringMatching(/repeated/) });
  });

  it("the Minca protocol §1.2: records are judged with no time — a version under an expired note still stands", async () => {
    const acct = await newAccount();
    const { signNote, noteNonce } = await import("../../../../shared/minca/note");
    const old = {
      ...acct,
      note: await signNote(acct.root, {
        iss: acct.root.did,
        aud: acct.session.did,
        sub: acct.root.did,
        cmd: "/",
        pol: [],
        exp: 1,
        nonce: noteNonce(),
      }),
    };
    const s = makeSpace(acct, "public");
    const { buildVersion } = await import("../../../../shared/minca/version");
    // built directly: the SDK's writeVersion would renew the note first
    const v = await buildVersion({ space: s.id, author: old.session, note: old.note, collection: "c", key: "k" });
    expect(v.note.payload.exp).toBe(1);
    expect(await checkVersion(v, gate(s))).toMatchObject({ ok: true });
  });

  it("the Minca protocol §1.3: in the account's own machinery only a note granting /account/write counts — a records-only note writing a pass is refused", async () => {
    const acct = await newAccount();
    const carry = carrySpace(acct.accountKey, acct.root.did, HOST, 0);
    const target = makeSpace(acct, "public");
    const pass = (a: typeof acct) => writeVersion(a, carry, { collection: "sys.pass", key: passKey(target.id), body: passBody(target) });
    expect(await checkVersion(await pass(acct), gate(carry, true))).toMatchObject({ ok: true });
    expect(await checkVersion(await pass(await withNote(acct, "/account")), gate(carry, true))).toMatchObject({ ok: true });
    expect(await checkVersion(await pass(await withNote(acct, "/record")), gate(carry, true))).toMatchObject({
      ok: false,
      reason: "not_account_write",
    });
    expect(commandCovers("/", "/account/write")).toBe(true);
    expect(commandCovers("/acc", "/account/write")).toBe(false);
  });

  it("the Minca protocol §4.2: only pass records verified as written by the carried account count — another account's pass in its carry space is refused", async () => {
    const acct = await newAccount();
    const mallory = await newAccount();
    const carry = carrySpace(acct.accountKey, acct.root.did, HOST, 0);
    const target = makeSpace(mallory, "public");
    const forged = await writeVersion(mallory, carry, { collection: "sys.pass", key: passKey(target.id), body: passBody(target) });
    expect(await checkVersion(forged, gate(carry, true))).toMatchObject({ ok: false, reason: "not_founder" });
  });

  it("policies: and, or, not, != over .space and .collection; anything unknown allows nothing", () => {
    const sub = { space: "s1", collection: "c1" };
    expect(policyAllows([], sub)).toBe(true);
    expect(
      policyAllows(
        [
          [
            "or",
            [
              ["==", ".space", "s2"],
              ["==", ".space", "s1"],
            ],
          ],
        ],
        sub,
      ),
    ).toBe(true);
    expect(policyAllows([["not", ["and", []]]], sub)).toBe(false);
    expect(policyAllows([["!=", ".collection", "c2"]], sub)).toBe(true);
    expect(policyAllows([["like", ".collection", "c*"]], sub)).toBe(false);
    expect(policyAllows([["not", ["like", ".collection", "c*"]]], sub)).toBe(false);
    expect(policyAllows([["==", ".body.x", "c1"]], sub)).toBe(false);
    fc.assert(
      fc.property(fc.array(fc.jsonValue({ maxDepth: 6 }), { maxLength: 4 }), (pol) => {
        expect(typeof policyAllows(pol, sub)).toBe("boolean");
      }),
      { seed: 907, numRuns: 500 },
    );
  });

  it("the gates never throw on arbitrary input (fuzz): everything not a version is malformed", async () => {
    const s = newSpace({ founders: [HOST], visibility: "public" });
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), async (j) => {
        const r = await checkVersion(j, gate(s));
        expect(r.ok).toBe(false);
      }),
      { seed: 903, numRuns: 300 },
    );
  });
});
