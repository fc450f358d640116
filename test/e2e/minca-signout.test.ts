// Signing out loses nothing (the Minca protocol §1.2, §2.10; the relay's hosting profile,
// "Revocations"), through the relay `npm start` runs: an account with two devices and a space
// shared with another account; device A signs out (a revoke of its key with a cutoff at what it
// wrote); device B and the other account read and write on, A's key is refused in every space,
// a carrier added afterwards (a second relay) refuses it too, and carry:closed written with A's
// key is refused.
import { rmSync } from "node:fs";
import { afterAll, describe, expect, inject, it } from "vitest";
import { HostConnection, newAccount, withNote, writeVersion } from "../../clients/minca/host";
import { newSpace } from "../../shared/minca/space";
import { startRelay, type RelayProcess } from "../helpers/relay-process";

const relayUrl = inject("relayUrl");
let second: RelayProcess | undefined;
afterAll(async () => {
  await second?.stop();
  if (second) rmSync(second.dataDir, { recursive: true, force: true });
});

describe("the Minca protocol §1.2: a device signs out and nothing is lost", () => {
  it("device A signs out; device B and the other account keep reading and writing; A's key is refused everywhere, at a carrier added later too, carry:closed included", async () => {
    const alice = await newAccount(); // device A
    const deviceB = await withNote(alice, "/");
    const bob = await newAccount();
    const aHost = new HostConnection(alice, relayUrl);
    await aHost.connect(0, "Alice");
    const bHost = new HostConnection(deviceB, relayUrl);
    bHost.carry = aHost.carry; // one account: both devices derive the same carry space
    const bobHost = new HostConnection(bob, relayUrl);
    await bobHost.connect(0, "Bob");

    const shared = newSpace({ founders: [alice.root.did, bob.root.did], visibility: "private" });
    const own = newSpace({ founders: [alice.root.did], visibility: "private" });
    expect(await aHost.pass(shared)).toMatchObject({ accepted: true });
    expect(await aHost.pass(own)).toMatchObject({ accepted: true });
    expect(await bobHost.pass(shared)).toMatchObject({ accepted: true });
    const byA = [
      await writeVersion(alice, shared, { collection: "std.message", key: "a1", body: { t: "from A" } }),
      await writeVersion(alice, own, { collection: "std.note", key: "a2", body: { t: "mine" } }),
    ];
    expect(await aHost.post(shared.id, [byA[0]])).toMatchObject([{ accepted: true }]);
    expect(await aHost.post(own.id, [byA[1]])).toMatchObject([{ accepted: true }]);

    // device A signs out (and forgets its key: what follows signs with a copy of it, as a thief would)
    const stolen = { ...alice };
    const thief = new HostConnection(stolen, relayUrl);
    thief.carry = aHost.carry;
    expect(await aHost.signOut()).toMatchObject({ accepted: true });
    expect(alice.signedOut).toBe(true);

    // what A wrote stays; B and Bob read and write on
    expect(await aHost.status()).toMatchObject({ spaces: 2 });
    const b1 = await writeVersion(deviceB, shared, { collection: "std.message", key: "b1", body: { t: "from B" } });
    const bob1 = await writeVersion(bob, shared, { collection: "std.message", key: "c1", body: { t: "from Bob" } });
    expect(await bHost.post(shared.id, [b1])).toMatchObject([{ accepted: true }]);
    expect(await bobHost.post(shared.id, [bob1])).toMatchObject([{ accepted: true }]);
    expect(await bHost.post(own.id, [await writeVersion(deviceB, own, { collection: "std.note", key: "b2", body: {} })])).toMatchObject([
      { accepted: true },
    ]);
    // the shared log: A's message, A's revoke of itself (signing out writes it where A wrote), B's and Bob's
    const sharedLog = (await bobHost.fetchLog(shared)).items.map((i) => i.version);
    expect(sharedLog.map((v) => v.id)).toEqual([byA[0].id, sharedLog[1].id, b1.id, bob1.id]);
    expect(sharedLog[1]).toMatchObject({ collection: "sys.revoke", author: alice.session.did });
    expect((await bHost.fetchLog(own)).items.map((i) => i.version.id)[0]).toBe(byA[1].id);

    // A's key is refused in every space: the shared one, its own, the carry space; carry:closed too
    const refused = [{ accepted: false, reason: "revoked" }];
    expect(
      await thief.post(shared.id, [await writeVersion(stolen, shared, { collection: "std.message", key: "a3", body: {} })]),
    ).toMatchObject(refused);
    expect(await thief.post(own.id, [await writeVersion(stolen, own, { collection: "std.note", key: "a4", body: {} })])).toMatchObject(
      refused,
    );
    expect(await thief.pass(newSpace({ founders: [alice.root.did], visibility: "public" }))).toMatchObject(refused[0]);
    expect(await thief.close()).toMatchObject(refused[0]);
    expect(await bHost.status()).toMatchObject({ spaces: 2 });

    // a carrier added afterwards (another relay): device B connects it; the account's known
    // revokes are copied there first, so A's key is refused there too, carry:closed included
    second = await startRelay();
    const bHost2 = new HostConnection(deviceB, second.url);
    await bHost2.connect(0, "Alice");
    expect(await bHost2.pass(own)).toMatchObject({ accepted: true });
    const aHost2 = new HostConnection(stolen, second.url);
    aHost2.carry = bHost2.carry;
    expect(await aHost2.post(own.id, [await writeVersion(stolen, own, { collection: "std.note", key: "a5", body: {} })])).toMatchObject(
      refused,
    );
    expect(await aHost2.close()).toMatchObject(refused[0]);
    expect(await bHost2.post(own.id, [await writeVersion(deviceB, own, { collection: "std.note", key: "b3", body: {} })])).toMatchObject([
      { accepted: true },
    ]);
    expect(await bHost2.status()).toMatchObject({ spaces: 1 });
  });
});
