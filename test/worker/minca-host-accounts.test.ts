// The Minca host inside workerd (docs/hosting.md): what an account's records do, revocations,
// quotas, the alarm's link sweep, and what carry:closed leaves in storage (nothing but the tombstone).
import { SELF, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { HostConnection, makeSpace, withNote, writeVersion } from "../../clients/minca/host";
import { linkTopic, passBody, passKey } from "../../shared/minca/carry";
import { utf8Encode } from "../../shared/encoding";
import { MINCA_HOST_LIMITS, STORAGE_LIMITS } from "../../shared/limits";
import { RELAY, accountStub, connected, fetchSelf, rows, spaceStub } from "./minca-host-setup";

describe("docs/hosting.md: revocations", () => {
  it("from the moment a revoke is stored, the revoked key's versions are refused (revoked) in every space carried for the account; what it wrote before keeps counting, and nothing is forgotten", async () => {
    const { acct, host } = await connected();
    const app = await withNote(acct, "/");
    const appHost = new HostConnection(app, RELAY, { fetch: fetchSelf });
    appHost.carry = host.carry;
    const s1 = makeSpace(acct, "private");
    const s2 = makeSpace(acct, "public");
    const s3 = makeSpace(acct, "private");
    expect(await host.pass(s1)).toMatchObject({ accepted: true });
    expect(await host.pass(s3)).toMatchObject({ accepted: true });
    // the app writes in a carried space and in the carry space: a pass, a pass over the device's, a link, a wake
    const before = await writeVersion(app, s1, { collection: "std.note", key: "a", body: { by: "app" } });
    expect(await appHost.post(s1.id, [before])).toMatchObject([{ accepted: true, seq: 1 }]);
    expect(await appHost.pass(s2)).toMatchObject({ accepted: true });
    const { readKeyDid, readSeedOf } = await import("../../shared/minca/space");
    const appKey = new Uint8Array(32).fill(7);
    expect(await appHost.pass({ ...s3, key: appKey }, readKeyDid(readSeedOf(appKey)))).toMatchObject({ accepted: true });
    expect(await appHost.link("link:app", utf8Encode(`app ${Math.random()}`), Math.floor(Date.now() / 1000) + 600)).toMatchObject({
      accepted: true,
    });
    expect(await appHost.wake("wake:app", { v: 1, name: "app", spaces: "all", collection: "c" })).toMatchObject({ accepted: true });
    expect(await host.status()).toMatchObject({ spaces: 3, links: 1, wakes: 1 });
    expect((await appHost.fetchLog({ ...s3, key: appKey })).items).toEqual([]);

    expect(await host.revoke(app.session.did)).toMatchObject({ accepted: true });

    // refused from now on, everywhere: a carried space, the carry space (passes, carry:closed, undoing the revoke)
    const after = await writeVersion(app, s1, { collection: "std.note", key: "b", body: { by: "app" } });
    expect(await appHost.post(s1.id, [after])).toMatchObject([{ accepted: false, reason: "revoked" }]);
    expect(await appHost.pass(makeSpace(acct, "public"))).toMatchObject({ accepted: false, reason: "revoked" });
    expect(await appHost.close()).toMatchObject({ accepted: false, reason: "revoked" });
    const { REVOKE, revokeKey } = await import("../../shared/minca/carry");
    const undo = await writeVersion(app, host.carry!, { collection: REVOKE, key: revokeKey(app.session.did), deleted: true });
    expect(await appHost.post(host.carry!.id, [undo])).toMatchObject([{ accepted: false, reason: "revoked" }]);
    // what it wrote before keeps counting (the revoker had seen it): its passes, its link, its wake
    expect(await host.status()).toMatchObject({ spaces: 3, links: 1, wakes: 1 });
    expect(await host.post(s2.id, [await writeVersion(acct, s2, { collection: "c", key: "k", body: {} })])).toMatchObject([
      { accepted: true },
    ]);
    expect((await appHost.fetchLog({ ...s3, key: appKey })).items).toEqual([]);
    // what was stored before stays stored; the account's other keys write on
    expect((await host.fetchLog(s1)).items.map((i) => i.version.id)).toEqual([before.id]);
    expect(await host.post(s1.id, [await writeVersion(acct, s1, { collection: "std.note", key: "c", body: {} })])).toMatchObject([
      { accepted: true, seq: 2 },
    ]);
    // even the account deleting the revoke record takes nothing back
    const deleteRevoke = await writeVersion(acct, host.carry!, { collection: REVOKE, key: revokeKey(app.session.did), deleted: true });
    expect(await host.post(host.carry!.id, [deleteRevoke])).toMatchObject([{ accepted: true }]);
    expect(await appHost.post(s1.id, [after])).toMatchObject([{ accepted: false, reason: "revoked" }]);
  });

  it("a key that revokes itself (signing out) writes nothing after its revoke, even later in the same request", async () => {
    const { acct, host } = await connected();
    const app = await withNote(acct, "/");
    const { REVOKE, revokeKey } = await import("../../shared/minca/carry");
    const revoke = await writeVersion(app, host.carry!, {
      collection: REVOKE,
      key: revokeKey(app.session.did),
      body: { v: 1, key: app.session.did },
    });
    const s = makeSpace(acct, "public");
    const laterPass = await writeVersion(app, host.carry!, { collection: "sys.pass", key: passKey(s.id), body: passBody(s) });
    expect((await host.post(host.carry!.id, [revoke, laterPass])).map((r) => (r.accepted ? "accepted" : r.reason))).toEqual([
      "accepted",
      "revoked",
    ]);
    expect(await host.status()).toMatchObject({ spaces: 0 });
  });
});

describe("quotas: an account pays for what it writes", () => {
  const fill = (did: string, bytes: number) =>
    runInDurableObject(accountStub(did), (_i, state) => {
      // a filler space charged `bytes` in all: its versions' bytes and its database (storage.database_bytes_space)
      state.storage.sql.exec(
        "INSERT INTO usage (space, versions, bytes) VALUES ('filler', 1, ?)",
        bytes - STORAGE_LIMITS.database_bytes_space,
      );
    });

  it("an account at its quota is refused only its own share: the other carriers of a shared space write on", async () => {
    const a = await connected();
    const b = await connected();
    const s = makeSpace(a.acct, "public", [a.acct.root.did, b.acct.root.did]);
    await a.host.pass(s);
    await b.host.pass(s);
    await fill(a.acct.root.did, MINCA_HOST_LIMITS.max_account_bytes - 10);
    await expect(a.host.post(s.id, [await writeVersion(a.acct, s, { collection: "c", key: "a", body: {} })])).rejects.toMatchObject({
      status: 507,
      code: "quota_exceeded",
    });
    expect(await b.host.post(s.id, [await writeVersion(b.acct, s, { collection: "c", key: "b", body: {} })])).toMatchObject([
      { accepted: true, seq: 1 },
    ]);
    expect(await b.host.status()).toMatchObject({ versions: 2 }); // its pass and its version
    expect(await a.host.status()).toMatchObject({ versions: 2 }); // its pass and the filler: the refused version left nothing
  });

  it("concurrent requests never take an account past its quota: the check and the charge are one step", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    await host.pass(s);
    const vs = await Promise.all(
      [0, 1, 2, 3, 4, 5].map((i) => writeVersion(acct, s, { collection: "c", key: `k${i}`, body: { pad: "x".repeat(1_000) } })),
    );
    const size = JSON.stringify(vs[0]).length;
    // room for two and a half versions and the space's database, which the first version pays (storage.database_bytes_space)
    const room = Math.floor(2.5 * size) + STORAGE_LIMITS.database_bytes_space;
    await fill(acct.root.did, MINCA_HOST_LIMITS.max_account_bytes - ((await host.status()) as any).bytes - room);
    const answers = await Promise.allSettled(vs.map((v) => host.post(s.id, [v])));
    const accepted = answers.filter((a) => a.status === "fulfilled").length;
    expect(accepted).toBe(2);
    expect(answers.filter((a) => a.status === "rejected").every((a) => (a as PromiseRejectedResult).reason.status === 507)).toBe(true);
    expect((await host.status()) as any).toMatchObject({ bytes: expect.any(Number) });
    expect(((await host.status()) as any).bytes).toBeLessThanOrEqual(MINCA_HOST_LIMITS.max_account_bytes);
    expect((await host.fetchLog(s)).items).toHaveLength(2);
  });
});

describe("the Minca protocol §4.2: links and carry:closed", () => {
  it("the alarm sweeps expired links; a mailbox fetch never serves one", async () => {
    const { acct, host } = await connected();
    const blob = utf8Encode(`link ${Math.random()}`);
    const topic = linkTopic(blob);
    const now = Math.floor(Date.now() / 1000);
    expect(await host.link("link:a", blob, now + 2)).toMatchObject({ accepted: true });
    let page = (await (await SELF.fetch(`${RELAY}/minca/v1/mailbox/${topic}`)).json()) as any;
    expect(page.items).toMatchObject([{ seq: 0, until: now + 2 }]);
    // The link's time passes without a wait for the clock: its row now ended a second ago.
    await runInDurableObject(accountStub(acct.root.did), (_i, st) => void st.storage.sql.exec("UPDATE links SET until = ?", now - 1));
    page = (await (await SELF.fetch(`${RELAY}/minca/v1/mailbox/${topic}`)).json()) as any;
    expect(page.items).toEqual([]);
    // the alarm (set at the link's until) sweeps it: run it now
    await runDurableObjectAlarm(accountStub(acct.root.did));
    expect(await rows(accountStub(acct.root.did), ["links"])).toEqual({ links: 0 });
    expect(
      await runInDurableObject(env.MINCA_MAILBOX.get(env.MINCA_MAILBOX.idFromName(topic)), (_i, st) =>
        st.storage.sql.exec("SELECT * FROM link_accounts").toArray(),
      ),
    ).toEqual([]);
  });

  it("a mailbox topic serves the links of at most max_link_accounts_per_topic accounts: a link past it is refused (too_many_link_accounts)", async () => {
    const { host } = await connected();
    const blob = utf8Encode(`shared ${Math.random()}`);
    const topic = linkTopic(blob);
    const other = await connected();
    expect(await other.host.link("link:x", blob, Math.floor(Date.now() / 1000) + 600)).toMatchObject({ accepted: true });
    await runInDurableObject(env.MINCA_MAILBOX.get(env.MINCA_MAILBOX.idFromName(topic)), (_i, st) => {
      for (let i = 1; i < MINCA_HOST_LIMITS.max_link_accounts_per_topic; i++)
        st.storage.sql.exec("INSERT INTO link_accounts (account) VALUES (?)", `did:key:filler${i}`);
    });
    expect(await host.link("link:y", blob, Math.floor(Date.now() / 1000) + 600)).toMatchObject({
      accepted: false,
      reason: "too_many_link_accounts",
    });
    expect(await host.status()).toMatchObject({ links: 0 });
    expect(await other.host.link("link:x", blob, Math.floor(Date.now() / 1000) + 700)).toMatchObject({ accepted: true }); // one already there writes on
  });

  it("carry:closed: the host forgets every row it held for the account and the status answers 410", async () => {
    const { acct, host } = await connected();
    const p = makeSpace(acct, "private");
    const q = makeSpace(acct, "public");
    await host.pass(p);
    await host.pass(q);
    await host.post(p.id, [await writeVersion(acct, p, { collection: "c", key: "k", body: { a: 1 } })]);
    await host.link("link:1", utf8Encode("blob"), Math.floor(Date.now() / 1000) + 600);
    expect(await host.close()).toMatchObject({ accepted: true });
    for (const id of [p.id, q.id, host.carry!.id])
      expect(await rows(spaceStub(id), ["log", "carriers", "meta"])).toEqual({ log: 0, carriers: 0, meta: 0 });
    expect(await rows(accountStub(acct.root.did), ["passes", "links", "usage"])).toEqual({ passes: 0, links: 0, usage: 0 });
    const meta = await runInDurableObject(accountStub(acct.root.did), (_i, state) =>
      state.storage.sql
        .exec<{ key: string }>("SELECT key FROM meta ORDER BY key")
        .toArray()
        .map((r) => r.key),
    );
    expect(meta).toEqual(["closed_at", "closed_read_key", "closed_space", "lease_bytes"]); // the lease charges the tombstone
    await expect(host.status()).rejects.toMatchObject({ status: 410, code: "carry_closed" });
    await expect(host.connect()).rejects.toMatchObject({ status: 410 });
    // connecting it again derives a new carry space (gen 1)
    expect(await host.connect(1)).toMatchObject({ account: acct.root.did });
    expect(await host.status()).toMatchObject({ spaces: 0 });
  });

  it("the tombstone outlives an unproven binding: a grant anyone may post after carry:closed does not clear it, and once that binding expires the closed carry space is still refused (410)", async () => {
    const { acct, host } = await connected();
    await host.pass(makeSpace(acct, "public"));
    expect(await host.close()).toMatchObject({ accepted: true });
    const stub = accountStub(acct.root.did);
    const metaKeys = () =>
      runInDurableObject(stub, (_i, st) =>
        st.storage.sql
          .exec<{ key: string }>("SELECT key FROM meta ORDER BY key")
          .toArray()
          .map((r) => r.key),
      );
    // a grant for another carry space (anyone may post one: it is not signed), never written in
    const squatter = new HostConnection(acct, RELAY, { fetch: fetchSelf });
    await squatter.connect(1);
    await expect(host.connect(0)).rejects.toMatchObject({ status: 410, code: "carry_closed" });
    // an hour on, nothing arrived: the binding expires and only the tombstone is left
    await runInDurableObject(stub, (_i, st) =>
      st.storage.sql.exec(
        "UPDATE meta SET value = ? WHERE key = 'bound_at'",
        String(Date.now() - MINCA_HOST_LIMITS.unproven_binding_seconds * 1000 - 1),
      ),
    );
    await runDurableObjectAlarm(stub);
    expect(await metaKeys()).toEqual(["closed_at", "closed_read_key", "closed_space", "lease_bytes"]);
    expect(await rows(stub, ["passes", "links", "usage", "wakes", "receivers", "pushes", "revoked"])).toEqual({
      passes: 0,
      links: 0,
      usage: 0,
      wakes: 0,
      receivers: 0,
      pushes: 0,
      revoked: 0,
    });
    expect(await runInDurableObject(stub, (_i, st) => st.storage.getAlarm())).toBeNull();
    await expect(host.connect(0)).rejects.toMatchObject({ status: 410, code: "carry_closed" });
    await expect(host.status()).rejects.toMatchObject({ status: 410 });
    // a new carry space the account writes in is proven: that clears the tombstone
    const next = new HostConnection(acct, RELAY, { fetch: fetchSelf });
    await next.connect(2);
    expect(await next.pass(makeSpace(acct, "public"))).toMatchObject({ accepted: true });
    expect((await metaKeys()).filter((k) => k.startsWith("closed_"))).toEqual([]);
    expect(await next.status()).toMatchObject({ spaces: 1 });
  });
});
