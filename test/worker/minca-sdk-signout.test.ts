// The SDK's sign-out, revokes and close at a Minca host (docs/hosting.md, "Revocations"): the
// cutoff is what the key wrote (remembered, or read back from the host), never 0 by default; a
// device learns the account's revokes from the carry space and copies only those a carry space
// lacks; signing out revokes in every space the node writes in, the carry space, the registry and
// the contacts space, then forgets the key; close() deletes the passes before carry:closed.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { HostConnection, makeSpace, newAccount, withNote, writeVersion, type MincaAccount } from "../../clients/minca/host";
import { PASS, REVOKE, revokeKey, type RevokeBody } from "../../shared/minca/carry";
import { utf8Encode } from "../../shared/encoding";
import type { Version } from "../../shared/minca/version";

const RELAY = "http://relay.test";
const fetchSelf = ((input: RequestInfo | URL, init?: RequestInit) => SELF.fetch(input as string, init)) as typeof fetch;

async function connected(acct?: MincaAccount) {
  const a = acct ?? (await newAccount());
  const host = new HostConnection(a, RELAY, { fetch: fetchSelf });
  await host.connect();
  return { acct: a, host };
}

/** Another device of the account: its own session, and none of this device's memory. */
async function otherDevice(of: MincaAccount) {
  const acct = { ...(await withNote(of, "/")), revoked: [] as RevokeBody[] };
  const host = new HostConnection(acct, RELAY, { fetch: fetchSelf });
  return { acct, host };
}

describe("signOut(): the cutoff is what the key wrote, never 0 by default", () => {
  it("a device that restarted (wroteUntil not remembered) reads its cutoff back from the host: its link keeps counting", async () => {
    const alice = await connected();
    const a = await otherDevice(alice.acct);
    await a.host.attach();
    const s = makeSpace(alice.acct, "public");
    expect(await alice.host.pass(s)).toMatchObject({ accepted: true });
    expect(await a.host.link("link:a", utf8Encode(`a ${Math.random()}`), Math.floor(Date.now() / 1000) + 600)).toMatchObject({
      accepted: true,
    });
    const note = await writeVersion(a.acct, s, { collection: "std.note", key: "n" });
    expect(await a.host.post(s.id, [note])).toMatchObject([{ accepted: true }]);
    // the device restarts: the same key, nothing remembered
    const restarted = { ...a.acct, wroteUntil: undefined, writesIn: undefined };
    const again = new HostConnection(restarted, RELAY, { fetch: fetchSelf });
    await again.attach();
    const out = await again.signOut();
    expect(out).toMatchObject({ accepted: true, cutoff: note.at });
    expect(await alice.host.status()).toMatchObject({ links: 1, spaces: 1 });
  });

  it("a device that remembers wroteUntil signs out with it", async () => {
    const alice = await connected();
    const a = await otherDevice(alice.acct);
    await a.host.attach();
    const s = makeSpace(alice.acct, "public");
    await alice.host.pass(s);
    const v = await writeVersion(a.acct, s, { collection: "c", key: "k", at: Date.now() - 5_000 });
    expect(a.acct.wroteUntil).toBe(v.at);
    expect(await a.host.signOut()).toMatchObject({ accepted: true, cutoff: v.at });
  });
});

describe("devices learn the account's revokes from the carry space", () => {
  it("device B learns A's revoke from the carry space and copies it into a new carry space before anything else; a copy it holds is never written again (no growth on connect())", async () => {
    const alice = await connected();
    const a = await otherDevice(alice.acct);
    await a.host.attach();
    expect(await a.host.signOut()).toMatchObject({ accepted: true });
    const b = await otherDevice(alice.acct);
    await b.host.attach();
    await b.host.learnRevokes();
    expect(b.acct.revoked.map((r) => r.key)).toContain(a.acct.session.did);

    // connect() again and again at the same carry space: nothing is written again
    const count = async () =>
      (await b.host.readLog(b.host.carry!.id, (await import("../../shared/minca/space")).readSeedOf(b.host.carry!.key!))).length;
    await b.host.connect();
    const n = await count();
    await b.host.connect();
    await b.host.connect();
    expect(await count()).toBe(n);

    // the account leaves and comes back (gen 1): B copies A's revoke into the new carry space first
    expect(await alice.host.close()).toMatchObject({ accepted: true });
    const b1 = new HostConnection(b.acct, RELAY, { fetch: fetchSelf });
    await b1.connect(1);
    const first = (await b1.readCarry()).versions[0];
    expect(first).toMatchObject({ collection: REVOKE, key: revokeKey(a.acct.session.did), author: b.acct.session.did });
  });
});

describe("signOut() revokes everywhere the node writes, then forgets the key; close() deletes the passes first", () => {
  it("the revoke is written in a shared space the node wrote in, the account registry, the contacts space and the carry space; the key then signs nothing", async () => {
    const alice = await connected();
    const bob = await connected();
    const shared = makeSpace(alice.acct, "private", [alice.acct.root.did, bob.acct.root.did]);
    const registry = makeSpace(alice.acct, "private");
    const contacts = makeSpace(alice.acct, "private");
    expect(await alice.host.pass(shared)).toMatchObject({ accepted: true });
    expect(await alice.host.pass(registry, undefined, { own: true })).toMatchObject({ accepted: true });
    expect(await alice.host.pass(contacts, undefined, { own: true })).toMatchObject({ accepted: true });
    expect(await bob.host.pass(shared)).toMatchObject({ accepted: true });
    const a = await otherDevice(alice.acct);
    await a.host.attach();
    expect(
      await a.host.post(shared.id, [await writeVersion(a.acct, shared, { collection: "std.message", key: "m", body: {} })]),
    ).toMatchObject([{ accepted: true }]);
    const out = await a.host.signOut({ spaces: [registry, contacts] });
    expect(out.accepted).toBe(true);
    const revokeIn = async (s: typeof shared) =>
      (await alice.host.fetchLog(s)).items.some((i) => i.version.collection === REVOKE && i.version.author === a.acct.session.did);
    expect(await revokeIn(shared)).toBe(true);
    expect(await revokeIn(registry)).toBe(true);
    expect(await revokeIn(contacts)).toBe(true);
    expect((await alice.host.readCarry()).revokes).toContainEqual({ v: 1, key: a.acct.session.did, cutoff: out.cutoff });
    await expect(writeVersion(a.acct, shared, { collection: "std.message", key: "m2", body: {} })).rejects.toThrow(/signed out/);
  });

  it("close() deletes every pass before it writes carry:closed", async () => {
    const alice = await connected();
    const s1 = makeSpace(alice.acct, "public");
    const s2 = makeSpace(alice.acct, "private");
    await alice.host.pass(s1);
    await alice.host.pass(s2);
    const posted: Version[] = [];
    const watching = new HostConnection(alice.acct, RELAY, {
      fetch: (async (input: RequestInfo | URL, init?: RequestInit) => {
        if (init?.method === "POST" && String(input).includes("/versions")) posted.push(...(JSON.parse(String(init.body)) as Version[]));
        return fetchSelf(input, init);
      }) as typeof fetch,
    });
    await watching.attach();
    expect(await watching.close()).toMatchObject({ accepted: true });
    expect(posted.map((v) => [v.collection, v.deleted === true])).toEqual([
      [PASS, true],
      [PASS, true],
      [PASS, false],
    ]);
    expect(posted[2].key).toBe("carry:closed");
  });
});
