import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { newP256Key } from "../../../../../shared/minca/es256";
import {
  checkGrant,
  checkCodeRequest,
  codeRequest,
  grantByCode,
  grantDays,
  MAX_GRANT_DAYS,
} from "../../../../../clients/minca/protocol/grant";
import { signKeyProof } from "../../../../../clients/minca/protocol/key-proof";
import { noteNonce, signNote, verifyNote } from "../../../../../shared/minca/note";

async function setup() {
  const account = { key: await newP256Key(), name: "Leif" };
  const program = await newP256Key();
  const proof = await signKeyProof(program, { via: "code", recordsOnly: true, origin: "https://home.example" });
  const req = codeRequest({ did: program.did, proof, name: "a terminal" });
  return { account, program, req };
}

describe("the Minca protocol sections 2.5 and 2.6: notes and grant checks", () => {
  it("a grant by code is a records-only note from the account to the ask's key, for the whole account", async () => {
    const { account, program, req } = await setup();
    const grant = await grantByCode(account, req, { days: 2, now: 1_790_000_000 });
    expect(grant).toMatchObject({ v: 2, did: account.key.did, name: "Leif", access: "write", scope: "account", expiresAt: 1_790_172_800 });
    expect(grant.note.payload).toMatchObject({ aud: program.did, iss: account.key.did, sub: account.key.did, cmd: "/record", pol: [] });
    expect((await checkGrant(grant, { audience: program.did, recordsOnly: true })).ok).toBe(true);
  });

  it("the Minca protocol §2.5 step 4: a grant's lifetime is within the home's bounds — NaN, infinite, zero or negative days are refused; huge or tiny ones are clamped to [1 hour, 365 days]", async () => {
    const { account, req } = await setup();
    for (const days of [Number.NaN, -1, 0, Number.POSITIVE_INFINITY, -Number.MAX_VALUE]) {
      expect(grantDays(days), String(days)).toBeNull();
      await expect(grantByCode(account, req, { days, now: 1_790_000_000 })).rejects.toBeInstanceOf(RangeError);
    }
    expect(grantDays(undefined)).toBe(7);
    expect((await grantByCode(account, req, { days: 1e9, now: 1_790_000_000 })).expiresAt).toBe(1_790_000_000 + MAX_GRANT_DAYS * 86_400);
    expect((await grantByCode(account, req, { days: 1e-9, now: 1_790_000_000 })).expiresAt).toBe(1_790_000_000 + 3_600);
  });

  it("the home checks the proof against its own origin, and never grants its own key", async () => {
    const { req } = await setup();
    expect((await checkCodeRequest(req, { origin: "https://home.example" })).ok).toBe(true);
    expect((await checkCodeRequest(req, { origin: "https://other.example" })).ok).toBe(false);
    expect((await checkCodeRequest(req, { origin: "https://home.example", sessionDid: req.audience })).ok).toBe(false);
    expect((await checkCodeRequest(req, { origin: "https://home.example", heldElsewhere: () => true })).ok).toBe(false);
  });

  it("a note for another key, from another account, for more than records, or tampered with is refused", async () => {
    const { account, program, req } = await setup();
    const grant = await grantByCode(account, req);
    const mine = { audience: program.did, recordsOnly: true };
    const other = await newP256Key();
    expect(await checkGrant(grant, { ...mine, audience: other.did })).toMatchObject({
      ok: false,
      reason: "the note is made out to another key",
    });
    expect(await checkGrant({ ...grant, did: other.did }, mine)).toMatchObject({
      ok: false,
      reason: "the note is not from the grant's account",
    });
    expect(await checkGrant({ ...grant, v: 1 }, mine)).toMatchObject({ ok: false });
    const wide = await signNote(account.key, { ...grant.note.payload, cmd: "/", nonce: noteNonce() });
    expect(await checkGrant({ ...grant, note: wide }, mine)).toMatchObject({ ok: false, reason: "the note grants more than records" });
    expect((await checkGrant({ ...grant, note: wide }, { ...mine, recordsOnly: false })).ok).toBe(true);
    const forged = { ...grant.note, payload: { ...grant.note.payload, sub: other.did } };
    expect(await checkGrant({ ...grant, note: forged }, mine)).toMatchObject({ ok: false, reason: "the note's signature does not verify" });
  });

  it("a note's time bounds count only when asked (live checks)", async () => {
    const { account, req } = await setup();
    const grant = await grantByCode(account, req, { now: 1000, days: 1 });
    expect((await verifyNote(grant.note)).ok).toBe(true);
    expect((await verifyNote(grant.note, 1000 + 86_400)).ok).toBe(false);
    expect((await verifyNote(grant.note, 999)).ok).toBe(false);
  });

  it("fuzz: verifying any JSON as a note or a grant never throws", async () => {
    const { program } = await setup();
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 4 }), async (v) => {
        expect((await verifyNote(v)).ok).toBe(false);
        expect((await checkGrant(v, { audience: program.did, recordsOnly: true })).ok).toBe(false);
      }),
      { numRuns: 200 },
    );
  });
});
