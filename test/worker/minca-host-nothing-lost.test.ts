// What a signed-out device wrote, a founder's space and a person's way out survive at a Minca host
// (the relay's hosting profile, "Revocations", "Carrier slots"): a revoke's cutoff vouches for
// what the key wrote whenever it arrives; the founder's account is never refused a slot; revokes,
// deletions and carry:closed are never refused for storage; any key may revoke itself; no version
// is dated beyond the host's clock.
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { HostConnection, makeSpace, newAccount, withNote, writeVersion } from "../../clients/minca/host";
import { buildVersion } from "../../shared/minca/version";
import { MINCA_HOST_LIMITS } from "../../shared/limits";
import { resetTotals, roomFor } from "../helpers/ledger-totals";
import { RELAY, accountStub, connected, fetchSelf } from "./minca-host-setup";

/** A second device of the account, at the same host and carry space. */
async function device(of: Awaited<ReturnType<typeof connected>>, cmd = "/") {
  const acct = await withNote(of.acct, cmd);
  const host = new HostConnection(acct, RELAY, { fetch: fetchSelf });
  host.carry = of.host.carry;
  return { acct, host };
}

const ids = async (host: HostConnection, s: Parameters<HostConnection["fetchLog"]>[0]) =>
  (await host.fetchLog(s)).items.map((i) => i.version.id);

describe("a revoke's cutoff vouches for what the key wrote, wherever and whenever it arrives", () => {
  it("a version by a revoked key at or before the cutoff is accepted when it arrives late, and at the same host after carry:closed; one after the cutoff is refused revoked", async () => {
    const alice = await connected();
    const a = await device(alice);
    const s = makeSpace(alice.acct, "private");
    expect(await alice.host.pass(s)).toMatchObject({ accepted: true });
    const a1 = await writeVersion(a.acct, s, { collection: "std.note", key: "a1", body: { t: 1 } });
    const a2 = await writeVersion(a.acct, s, { collection: "std.note", key: "a2", body: { t: 2 }, at: a1.at + 1 });
    expect(await a.host.post(s.id, [a1])).toMatchObject([{ accepted: true }]);
    // device A signs out with its cutoff at a2, which only another device holds yet (a late copy)
    expect(await alice.host.revoke(a.acct.session.did, { cutoff: a2.at })).toMatchObject({ accepted: true });
    const a3 = await writeVersion(a.acct, s, { collection: "std.note", key: "a3", body: { t: 3 }, at: a2.at + 1 });
    expect(await alice.host.post(s.id, [a2, a3])).toMatchObject([{ accepted: true }, { accepted: false, reason: "revoked" }]);
    expect(await ids(alice.host, s)).toEqual([a1.id, a2.id]);

    // the account leaves the host and comes back (gen 1): the host still knows A's revoke, and
    // takes again what A wrote before its cutoff
    expect(await alice.host.close()).toMatchObject({ accepted: true });
    const again = new HostConnection(alice.acct, RELAY, { fetch: fetchSelf });
    await again.connect(1);
    expect(await again.pass(s)).toMatchObject({ accepted: true });
    expect(await again.post(s.id, [a1, a2, a3])).toMatchObject([
      { accepted: true },
      { accepted: true },
      { accepted: false, reason: "revoked" },
    ]);
    expect(await ids(again, s)).toEqual([a1.id, a2.id]);
  });

  it("in the carry space too: a record the revoked key wrote before its cutoff counts when it arrives after the revoke; carry:closed by it never does", async () => {
    const alice = await connected();
    const a = await device(alice);
    const s = makeSpace(alice.acct, "public");
    const { PASS, passKey, passBody, CLOSED_KEY } = await import("../../shared/minca/carry");
    const pass = await writeVersion(a.acct, alice.host.carry!, { collection: PASS, key: passKey(s.id), body: passBody(s) });
    const closed = await writeVersion(a.acct, alice.host.carry!, {
      collection: PASS,
      key: CLOSED_KEY,
      body: { v: 1, closed: true },
      at: pass.at,
    });
    expect(await alice.host.revoke(a.acct.session.did, { cutoff: pass.at })).toMatchObject({ accepted: true });
    expect(await alice.host.post(alice.host.carry!.id, [pass, closed])).toMatchObject([
      { accepted: true },
      { accepted: false, reason: "revoked" },
    ]);
    expect(await alice.host.status()).toMatchObject({ spaces: 1 });
  });
});

describe("carrier slots: the founder's account is never refused one", () => {
  it(`${MINCA_HOST_LIMITS.max_carriers_per_space} strangers pass a public space first: the founder's pass still takes a slot, its writes are charged to it, and the log outlives the strangers' passes`, async () => {
    const founder = await connected();
    const s = makeSpace(founder.acct, "public");
    const strangers = await Promise.all(Array.from({ length: MINCA_HOST_LIMITS.max_carriers_per_space }, () => connected()));
    for (const st of strangers) expect(await st.host.pass(s)).toMatchObject({ accepted: true });
    expect(await founder.host.pass(s)).toMatchObject({ accepted: true });
    const v = await writeVersion(founder.acct, s, { collection: "std.post", key: "p1", body: { t: "mine" } });
    expect(await founder.host.post(s.id, [v])).toMatchObject([{ accepted: true }]);
    expect(await founder.host.status()).toMatchObject({ spaces: 1, versions: expect.any(Number) });
    expect(((await founder.host.status()).versions as number) >= 2).toBe(true); // its pass and its post
    // one stranger lost its slot to the founder; the others leave
    const left = await Promise.all(strangers.map((st) => st.host.status()));
    expect(left.filter((x) => x.spaces === 0)).toHaveLength(1);
    for (const st of strangers) await st.host.unpass(s);
    expect(await ids(founder.host, s)).toEqual([v.id]);
  });

  it("the SDK tells an account whose pass was refused that the host does not carry the space for it (not_carried)", async () => {
    const s = makeSpace(await newAccount(), "public");
    const strangers = await Promise.all(Array.from({ length: MINCA_HOST_LIMITS.max_carriers_per_space }, () => connected()));
    for (const st of strangers) await st.host.pass(s);
    const late = await connected();
    await expect(late.host.pass(s)).rejects.toMatchObject({ code: "not_carried" });
    expect(await late.host.status()).toMatchObject({ spaces: 0 });
  });
});

describe("revokes, deletions and carry:closed are never refused for storage", () => {
  const fill = (did: string, bytes: number) =>
    runInDurableObject(accountStub(did), (_i, state) => {
      state.storage.sql.exec("INSERT INTO usage (space, versions, bytes) VALUES ('filler', 1, ?)", bytes);
    });

  it("an account at its quota: a new record is refused 507, yet a revoke, a pass's and a wake's deletion and carry:closed are accepted (the overdraft)", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    expect(await host.pass(s)).toMatchObject({ accepted: true });
    expect(await host.wake("wake:a", { v: 1, name: "a", spaces: "all", collection: "c" })).toMatchObject({ accepted: true });
    await fill(acct.root.did, MINCA_HOST_LIMITS.max_account_bytes - ((await host.status()).bytes as number));
    await expect(host.post(s.id, [await writeVersion(acct, s, { collection: "c", key: "k", body: {} })])).rejects.toMatchObject({
      status: 507,
    });
    const app = await withNote(acct, "/");
    expect(await host.revoke(app.session.did, { cutoff: 0 })).toMatchObject({ accepted: true });
    expect(await host.unpass(s)).toMatchObject({ accepted: true });
    const wakeGone = await writeVersion(acct, host.carry!, { collection: "sys.wake", key: "wake:a", deleted: true });
    expect(await host.post(host.carry!.id, [wakeGone])).toMatchObject([{ accepted: true }]);
    expect(await host.status()).toMatchObject({ spaces: 0, wakes: 0 });
    expect(await host.close()).toMatchObject({ accepted: true });
  });

  it("the host's total full: a new record is refused storage_full, yet a revoke, a pass's deletion and carry:closed are accepted", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    expect(await host.pass(s)).toMatchObject({ accepted: true });
    await roomFor("host", 0);
    try {
      const lease = await accountStub(acct.root.did).leaseHeld();
      await fill(acct.root.did, lease - ((await host.status()).bytes as number));
      await expect(host.post(s.id, [await writeVersion(acct, s, { collection: "c", key: "k", body: {} })])).rejects.toMatchObject({
        status: 507,
        code: "storage_full",
      });
      const app = await withNote(acct, "/");
      expect(await host.revoke(app.session.did, { cutoff: 0 })).toMatchObject({ accepted: true });
      expect(await host.unpass(s)).toMatchObject({ accepted: true });
      expect(await host.close()).toMatchObject({ accepted: true });
    } finally {
      await resetTotals();
    }
  });
});

describe("any key may revoke itself, whatever its note grants", () => {
  it("a records-only program revokes its own key in the carry space; revoking another key it may not (not_account_write)", async () => {
    const alice = await connected();
    const program = await device(alice, "/record");
    const other = await withNote(alice.acct, "/");
    const s = makeSpace(alice.acct, "public");
    expect(await alice.host.pass(s)).toMatchObject({ accepted: true });
    expect(await program.host.revoke(other.session.did)).toMatchObject({ accepted: false, reason: "not_account_write" });
    const before = await writeVersion(program.acct, s, { collection: "std.note", key: "p", body: {} });
    expect(await program.host.revoke(program.acct.session.did, { cutoff: before.at })).toMatchObject({ accepted: true });
    const after = await writeVersion(program.acct, s, { collection: "std.note", key: "q", body: {}, at: before.at + 1 });
    expect(await program.host.post(s.id, [before, after])).toMatchObject([{ accepted: true }, { accepted: false, reason: "revoked" }]);
  });
});

describe("no version from the future", () => {
  it(`a version's at is at most ${MINCA_HOST_LIMITS.max_future_ms / 60_000} minutes ahead of the host's clock, else from_future; 2^53-1 never freezes a record`, async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    expect(await host.pass(s)).toMatchObject({ accepted: true });
    const at = (ahead: number) => writeVersion(acct, s, { collection: "c", key: "k", body: {}, at: Date.now() + ahead });
    expect(await host.post(s.id, [await at(MINCA_HOST_LIMITS.max_future_ms - 60_000)])).toMatchObject([{ accepted: true }]);
    expect(await host.post(s.id, [await at(MINCA_HOST_LIMITS.max_future_ms + 60_000)])).toMatchObject([
      { accepted: false, reason: "from_future" },
    ]);
    const frozen = await buildVersion({
      space: s.id,
      collection: "c",
      key: "k",
      author: acct.session,
      note: acct.note,
      body: {},
      at: Number.MAX_SAFE_INTEGER,
    });
    expect(await host.post(s.id, [frozen])).toMatchObject([{ accepted: false, reason: "from_future" }]);
  });
});
