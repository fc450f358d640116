// Moving an account between two relays loses nothing (docs/hosting.md, "Moving an account"):
// Alice has devices A and B and shares a space with Bob. Device A signs out; device B moves
// Alice's account from the first relay to a second with the SDK; a new device C reads at the new
// host everything A wrote before its cutoff, B's and Bob's records too, and A's key is refused
// there. Bob moves his own account with the move CLI (a dry run first).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, inject, it } from "vitest";
import { HostConnection, newAccount, withNote, writeVersion } from "../../clients/minca/host";
import { moveAccount, type MoveProgress } from "../../clients/minca/move";
import { accountToJson } from "../../clients/minca/account-file";
import { newSpace, type Space } from "../../shared/minca/space";
import type { RevokeBody } from "../../shared/minca/carry";
import { startRelay, type RelayProcess } from "../helpers/relay-process";

const relayUrl = inject("relayUrl");
const root = new URL("../../", import.meta.url).pathname;
let second: RelayProcess | undefined;
const dir = mkdtempSync(join(tmpdir(), "minca-move-"));
afterAll(async () => {
  await second?.stop();
  if (second) rmSync(second.dataDir, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
});

const idsOf = async (host: HostConnection, s: Space) => (await host.fetchLog(s)).items.map((i) => i.version.id);

describe("moving an account between hosts", () => {
  it("device A signs out, B moves the account to a second relay; a new device reads there all A wrote before its cutoff, B's and Bob's records, and A's key is refused; Bob moves with the CLI", async () => {
    second = await startRelay();
    const alice = await newAccount(); // device A
    const deviceB = { ...(await withNote(alice, "/")), revoked: [] as RevokeBody[] }; // its own memory
    const bob = await newAccount("/", { extractable: true });
    const aHost = new HostConnection(alice, relayUrl);
    await aHost.connect(0, "Alice");
    const bHost = new HostConnection(deviceB, relayUrl);
    await bHost.attach();
    const bobHost = new HostConnection(bob, relayUrl);
    await bobHost.connect(0, "Bob");

    const shared = newSpace({ founders: [alice.root.did, bob.root.did], visibility: "private" });
    const own = newSpace({ founders: [alice.root.did], visibility: "private" });
    await aHost.pass(shared);
    await aHost.pass(own);
    await bobHost.pass(shared);
    const a1 = await writeVersion(alice, shared, { collection: "std.message", key: "a1", body: { t: "from A" } });
    const a2 = await writeVersion(alice, own, { collection: "std.note", key: "a2", body: { t: "mine" } });
    expect(await aHost.post(shared.id, [a1])).toMatchObject([{ accepted: true }]);
    expect(await aHost.post(own.id, [a2])).toMatchObject([{ accepted: true }]);
    expect(await aHost.wake("wake:a", { v: 1, name: "a", spaces: "all", collection: "std.message" })).toMatchObject({ accepted: true });
    const b1 = await writeVersion(deviceB, shared, { collection: "std.message", key: "b1", body: { t: "from B" } });
    const bob1 = await writeVersion(bob, shared, { collection: "std.message", key: "c1", body: { t: "from Bob" } });
    expect(await bHost.post(shared.id, [b1])).toMatchObject([{ accepted: true }]);
    expect(await bobHost.post(shared.id, [bob1])).toMatchObject([{ accepted: true }]);

    // device A signs out (a thief keeps a copy of its key)
    const stolen = { ...alice };
    const wroteUntil = alice.wroteUntil; // its wake, after a1 and a2
    const signedOut = await aHost.signOut();
    expect(signedOut).toMatchObject({ accepted: true, cutoff: wroteUntil });

    // device B moves the account: everything copied and checked, then closed at the first relay
    const steps: MoveProgress[] = [];
    const bHost2 = new HostConnection(deviceB, second.url);
    const report = await moveAccount(bHost, bHost2, { name: "Alice", onProgress: (p) => steps.push(p) });
    expect(report).toMatchObject({ closed: true, revokes: 1, records: 3 });
    expect(new Set(steps.map((s) => s.step))).toEqual(new Set(["read", "connect", "carry", "space", "check", "close", "done"]));
    await expect(bHost.status()).rejects.toMatchObject({ status: 410 });
    // Bob still carries the shared space at the first relay: nothing of it is lost there
    expect(await idsOf(bobHost, shared)).toContain(a1.id);

    // a new device C of Alice's, knowing nothing, connects the second relay
    const deviceC = { ...(await withNote(alice, "/")), revoked: [] as RevokeBody[] };
    const cHost = new HostConnection(deviceC, second.url);
    await cHost.connect(0, "Alice");
    expect(deviceC.revoked.map((r) => r.key)).toEqual([alice.session.did]); // learned from the carry space
    expect(await cHost.status()).toMatchObject({ spaces: 2, wakes: 1 });
    const sharedAt2 = await idsOf(cHost, shared);
    for (const v of [a1, b1, bob1]) expect(sharedAt2).toContain(v.id);
    expect(await idsOf(cHost, own)).toContain(a2.id);
    // A's key is refused at the new host, in a carried space and in the carry space
    const thief = new HostConnection(stolen, second.url);
    thief.carry = cHost.carry;
    const a3 = await writeVersion(stolen, own, { collection: "std.note", key: "a3", body: {} });
    expect(await thief.post(own.id, [a3])).toMatchObject([{ accepted: false, reason: "revoked" }]);
    expect(await thief.close()).toMatchObject({ accepted: false, reason: "revoked" });
    const c1 = await writeVersion(deviceC, own, { collection: "std.note", key: "c1", body: {} });
    expect(await cHost.post(own.id, [c1])).toMatchObject([{ accepted: true }]);

    // Bob moves his own account with the CLI: a dry run writes nothing, then the move
    const file = join(dir, "bob.json");
    writeFileSync(file, JSON.stringify(await accountToJson(bob)), { mode: 0o600 });
    const cli = (...args: string[]) =>
      spawnSync(join(root, "node_modules/.bin/tsx"), [join(root, "clients/minca/move-cli.ts"), "--account", file, ...args], {
        cwd: root,
        encoding: "utf8",
        timeout: 60_000,
      });
    const dry = cli("--from", relayUrl, "--to", second.url, "--dry-run");
    expect(dry.status, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/Would copy 0 revokes, 1 carry-space records, 1 spaces \(\d+ versions/);
    expect((await bobHost.status()).spaces).toBe(1); // still at the first relay
    const moved = cli("--from", relayUrl, "--to", second.url);
    expect(moved.status, moved.stdout + moved.stderr).toBe(0);
    expect(moved.stdout).toMatch(/\[check\]/);
    expect(moved.stdout).toMatch(/Moved:/);
    await expect(bobHost.status()).rejects.toMatchObject({ status: 410 });
    const bobHost2 = new HostConnection(bob, second.url);
    await bobHost2.attach();
    expect(await bobHost2.status()).toMatchObject({ spaces: 1 });
    for (const v of [a1, b1, bob1]) expect(await idsOf(bobHost2, shared)).toContain(v.id);
  });
});
