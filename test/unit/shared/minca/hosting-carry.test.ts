// The rules of the Minca protocol §4.2-4.3 a host applies, checked on the pure modules: passes,
// links and carry:closed in the carry space, the carrier's checks of a CarryGrant, read proofs.
// Every decoder of untrusted input is fuzzed at a fixed seed.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { base64urlEncode, utf8Encode } from "../../../../shared/encoding";
import { newAccount, writeVersion, makeSpace } from "../../../../clients/minca/host";
import {
  carryGenOf,
  carryGrant,
  checkCarryGrant,
  linkTopic,
  passBody,
  passKey,
  readCarryRecord,
  receiverKey,
} from "../../../../shared/minca/carry";
import { mincaId } from "../../../../shared/minca/id";
import { encodeInvite } from "../../../../shared/minca/invite";
import { checkReadProof, readProofHeaders } from "../../../../shared/minca/read-proof";
import { bodyKeyOf, carrySpace, newSpace, readKeyDid, readSeedOf } from "../../../../shared/minca/space";
import type { Version } from "../../../../shared/minca/version";
import { HOST } from "../../../helpers/minca-hosting";

describe("the Minca protocol §4.2: passes, carry:closed and links in the carry space", () => {
  async function setup() {
    const acct = await newAccount();
    const carry = carrySpace(acct.accountKey, acct.root.did, HOST, 0);
    const bk = bodyKeyOf(carry.key!);
    const read = async (w: Parameters<typeof writeVersion>[2]) => readCarryRecord((await writeVersion(acct, carry, w)) as Version, bk);
    return { acct, carry, read };
  }

  it("a carrier accepts a pass only if the space hashes to its id", async () => {
    const { acct, read } = await setup();
    const a = makeSpace(acct, "public");
    const b = makeSpace(acct, "public");
    expect(await read({ collection: "sys.pass", key: passKey(a.id), body: passBody(a) })).toMatchObject({ kind: "pass", space: a.id });
    expect(await read({ collection: "sys.pass", key: passKey(a.id), body: passBody(b) })).toMatchObject({
      kind: "refused",
      reason: "pass_space_mismatch",
    });
  });

  it("for a private space, only if the read seed's did equals space.readKey or the pass's readKey", async () => {
    const { acct, read } = await setup();
    const p = makeSpace(acct, "private");
    expect(await read({ collection: "sys.pass", key: passKey(p.id), body: passBody(p) })).toMatchObject({
      kind: "pass",
      readKey: p.constitution.readKey,
    });
    // after a key change: the new key's read seed, naming its readKey in the pass
    const newKey = new Uint8Array(32).fill(3);
    const changed = passBody({ constitution: p.constitution, key: newKey }, readKeyDid(readSeedOf(newKey)));
    expect(await read({ collection: "sys.pass", key: passKey(p.id), body: changed })).toMatchObject({
      kind: "pass",
      readKey: readKeyDid(readSeedOf(newKey)),
    });
    // a seed that matches neither
    const wrong = passBody({ constitution: p.constitution, key: newKey });
    expect(await read({ collection: "sys.pass", key: passKey(p.id), body: wrong })).toMatchObject({
      kind: "refused",
      reason: "pass_read_key_mismatch",
    });
    expect(await read({ collection: "sys.pass", key: passKey(p.id), body: { v: 1, constitution: p.constitution } })).toMatchObject({
      reason: "pass_read_key_mismatch",
    });
  });

  it("a deleted pass, carry:closed, links (topic from the blob itself) and receivers read as what they are", async () => {
    const { read } = await setup();
    expect(await read({ collection: "sys.pass", key: "pass:00", deleted: true })).toEqual({ kind: "pass_deleted", key: "pass:00" });
    expect(await read({ collection: "sys.pass", key: "carry:closed", body: { v: 1, closed: true } })).toEqual({ kind: "closed" });
    expect(await read({ collection: "sys.pass", key: "carry:closed", body: { v: 1, closed: false } })).toMatchObject({ kind: "refused" });
    const blob = utf8Encode("hello link");
    const l = await read({ collection: "sys.link", key: "link:1", body: { v: 1, blob: base64urlEncode(blob), until: 99 } });
    expect(l).toMatchObject({ kind: "link", topic: linkTopic(blob), until: 99 });
    expect(linkTopic(blob)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const push = {
      endpoint: "https://push.example/x",
      keys: { p256dh: base64urlEncode(new Uint8Array(65)), auth: "AAAAAAAAAAAAAAAAAAAAAA" },
    };
    expect(await read({ collection: "sys.receiver", key: receiverKey(push.endpoint), body: { v: 1, device: "d", push } })).toMatchObject({
      kind: "refused",
    });
    expect(await read({ collection: "std.other", key: "x", body: {} })).toEqual({ kind: "other" });
  });

  it("docs/hosting.md: a revoke reads as the did it revokes only under its own key (revoke:<hash of the did>); a deleted revoke takes nothing back", async () => {
    const acct = await newAccount();
    const carry = carrySpace(acct.accountKey, acct.root.did, HOST, 0);
    const bk = bodyKeyOf(carry.key!);
    const app = (await newAccount()).session.did;
    const { REVOKE, revokeKey } = await import("../../../../shared/minca/carry");
    const ok = await writeVersion(acct, carry, { collection: REVOKE, key: revokeKey(app), body: { v: 1, key: app } });
    expect(readCarryRecord(ok, bk)).toEqual({ kind: "revoke", revoked: app, cutoff: null });
    const withCutoff = await writeVersion(acct, carry, {
      collection: REVOKE,
      key: revokeKey(app),
      body: { v: 1, key: app, cutoff: 1_234 },
    });
    expect(readCarryRecord(withCutoff, bk)).toEqual({ kind: "revoke", revoked: app, cutoff: 1_234 });
    const wrongKey = await writeVersion(acct, carry, { collection: REVOKE, key: revokeKey(acct.root.did), body: { v: 1, key: app } });
    expect(readCarryRecord(wrongKey, bk)).toMatchObject({ kind: "refused", reason: "unreadable_record" });
    const notDid = await writeVersion(acct, carry, { collection: REVOKE, key: revokeKey("x"), body: { v: 1, key: "x" } });
    expect(readCarryRecord(notDid, bk)).toMatchObject({ kind: "refused" });
    const deleted = await writeVersion(acct, carry, { collection: REVOKE, key: revokeKey(app), deleted: true });
    expect(readCarryRecord(deleted, bk)).toEqual({ kind: "other" });
  });

  it("carry-space bodies the host cannot open are unreadable, never accepted as passes (fuzz over pass bodies)", async () => {
    const { acct, carry } = await setup();
    const bk = bodyKeyOf(carry.key!);
    const vs = await Promise.all(
      fc
        .sample(fc.jsonValue(), { seed: 904, numRuns: 40 })
        .map((j) =>
          writeVersion(acct, carry, { collection: "sys.pass", key: "pass:ab", body: { v: 1, constitution: j } as Record<string, unknown> }),
        ),
    );
    for (const v of vs) expect(readCarryRecord(v, bk).kind).toBe("refused");
  });
});

describe("the Minca protocol §4.3: the carrier's checks of a CarryGrant", () => {
  it("accepts the grant a home makes, and refuses each thing the Minca protocol names", async () => {
    const acct = await newAccount();
    const carry = carrySpace(acct.accountKey, acct.root.did, HOST, 0);
    const good = carryGrant({ account: acct.root.did, name: "Leif", carrySpace: carry, invite: encodeInvite(carry) });
    expect(checkCarryGrant(good, HOST)).toMatchObject({ ok: true, start: { account: acct.root.did, carrySpace: carry.id } });
    const bad = (g: unknown, why: RegExp) => {
      const r = checkCarryGrant(g, HOST);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.reason).toMatch(why);
    };
    bad({ ...good, kind: "app" }, /kind/);
    const other = newSpace({ founders: [acct.root.did], visibility: "private" });
    bad({ ...good, carry: { space: carry.id, invite: encodeInvite(other) } }, /another space/);
    const pub = newSpace({ founders: [acct.root.did], visibility: "public" });
    bad({ ...good, carry: { space: pub.id, invite: encodeInvite(pub) } }, /not private/);
    const two = newSpace({ founders: [acct.root.did, HOST], visibility: "private" });
    bad({ ...good, carry: { space: two.id, invite: encodeInvite(two) } }, /one founder/);
    bad({ ...good, carry: { space: carry.id, invite: encodeInvite({ ...carry, key: undefined }) } }, /key/);
    bad({ ...good, pod: { dataPath: "accounts/../x", folder: "Minca" } }, /dataPath/);
    bad({ ...good, pod: { dataPath: "accounts//x", folder: "Minca" } }, /dataPath/);
    expect(checkCarryGrant({ ...good, pod: { dataPath: "accounts/k3j2h4g5f6d7/stores", folder: "Minca" } }, HOST).ok).toBe(true);
    const forOther = carrySpace(acct.accountKey, acct.root.did, acct.root.did, 0);
    bad({ ...good, carry: { space: forOther.id, invite: encodeInvite(forOther) } }, /this carrier/);
    bad({ ...good, roles: {} }, /malformed/);
  });

  it("the Minca protocol §4.2: a gen that is not a non-negative integer names no carry space — -1, abc, 01, 1.5 and nothing are refused", async () => {
    const acct = await newAccount();
    for (const gen of ["-1", "abc", "01", "1.5", "", "1e3", " 1", "99999999999999999"]) {
      const bad = newSpace({ founders: [acct.root.did], visibility: "private", nonce: `carry:${HOST}:${gen}` });
      const r = checkCarryGrant(carryGrant({ account: acct.root.did, carrySpace: bad, invite: encodeInvite(bad) }), HOST);
      expect(r, `gen ${JSON.stringify(gen)}`).toMatchObject({ ok: false, reason: expect.stringMatching(/gen/) });
    }
    for (const gen of [0, 1, 12, Number.MAX_SAFE_INTEGER]) {
      const good = carrySpace(acct.accountKey, acct.root.did, HOST, gen);
      expect(checkCarryGrant(carryGrant({ account: acct.root.did, carrySpace: good, invite: encodeInvite(good) }), HOST).ok).toBe(true);
      expect(carryGenOf(good.constitution.nonce)).toBe(gen);
    }
  });

  it("never throws on arbitrary input (fuzz)", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (j) => {
        expect(checkCarryGrant(j, HOST).ok).toBe(false);
      }),
      { seed: 905, numRuns: 400 },
    );
  });
});

describe("docs/hosting.md: read proofs", () => {
  it("a proof by the read key within 60 s reads; none is missing; a wrong key, space or stale time is invalid", () => {
    const s = newSpace({ founders: [HOST], visibility: "private" });
    const seed = readSeedOf(s.key!);
    const now = 1_800_000_000;
    const h = readProofHeaders(seed, s.id, now);
    const check = (hh: Record<string, string>, space = s.id, at = now) =>
      checkReadProof({ authorization: hh.Authorization ?? null, time: hh["Minca-Time"] ?? null }, space, [s.constitution.readKey!], at);
    expect(check(h)).toBe("ok");
    expect(check({})).toBe("missing");
    expect(check(h, s.id, now + 61)).toBe("invalid");
    expect(check(h, mincaId(utf8Encode("x")))).toBe("invalid");
    expect(check(readProofHeaders(new Uint8Array(32), s.id, now))).toBe("invalid");
    expect(check({ ...h, "Minca-Time": String(now + 1) })).toBe("invalid");
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, t) => {
        expect(checkReadProof({ authorization: a, time: t }, s.id, [s.constitution.readKey!], now)).not.toBe("ok");
      }),
      { seed: 906, numRuns: 300 },
    );
  });
});
