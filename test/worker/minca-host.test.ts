// The Minca host inside workerd (docs/hosting.md): accounts and spaces as Durable Objects, the
// carry space's records driving them, durability across eviction, the alarm's link sweep, and
// what carry:closed leaves in storage (nothing but the tombstone).
import { SELF, env, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { HostConnection, makeSpace, newAccount, withNote, writeVersion } from "../../clients/minca/host";
import { linkTopic, passBody, passKey } from "../../shared/minca/carry";
import { utf8Encode } from "../../shared/encoding";
import { readSeedOf } from "../../shared/minca/space";
import { MINCA_HOST_LIMITS } from "../../shared/limits";
import type { TestMincaAccount } from "./test-objects";
import { waitFor } from "../helpers/wait";

const RELAY = "http://relay.test";
const fetchSelf = ((input: RequestInfo | URL, init?: RequestInit) => SELF.fetch(input as string, init)) as typeof fetch;
const spaceStub = (id: string) => env.MINCA_SPACE.get(env.MINCA_SPACE.idFromName(id));
const accountStub = (did: string) => env.MINCA_ACCOUNT.get(env.MINCA_ACCOUNT.idFromName(did));
const rows = (stub: DurableObjectStub, tables: string[]) =>
  runInDurableObject(stub, (_i, state) => {
    const out: Record<string, number> = {};
    for (const t of tables) {
      // an object that never kept anything has no tables at all (docs/hostile.md: nothing is stored for free)
      const exists = state.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", t).toArray().length > 0;
      out[t] = exists ? state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${t}`).one().n : 0;
    }
    return out;
  });

async function connected() {
  const acct = await newAccount();
  const host = new HostConnection(acct, RELAY, { fetch: fetchSelf });
  await host.connect();
  return { acct, host };
}

describe("docs/hosting.md: the host's identity and connecting it", () => {
  it("the information document names the host's did and name; the same did on every request", async () => {
    const doc = (await (await SELF.fetch(`${RELAY}/`, { headers: { accept: "application/json" } })).json()) as any;
    expect(doc.protocols.minca.host.did).toMatch(/^did:key:zDn/);
    expect(doc.protocols.minca.host.name).toBe("edge-relay");
    expect(doc.limits.minca_host.links_served_per_account).toBe(64);
    const again = (await (await SELF.fetch(`${RELAY}/`, { headers: { accept: "application/json" } })).json()) as any;
    expect(again.protocols.minca.host.did).toBe(doc.protocols.minca.host.did);
  });

  it("the Minca protocol §4.3: a CarryGrant failing the carrier's checks is refused with invalid_grant; a good one starts carrying", async () => {
    const acct = await newAccount();
    const host = new HostConnection(acct, RELAY, { fetch: fetchSelf });
    const grant = await host.grant();
    const post = (g: unknown) => SELF.fetch(`${RELAY}/minca/v1/host/accounts`, { method: "POST", body: JSON.stringify(g) });
    const bad = await post({ ...grant, kind: "app" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.code).toBe("invalid_grant");
    expect((await post({ ...grant, pod: { dataPath: "a/../b", folder: "Minca" } })).status).toBe(400);
    const ok = await post(grant);
    expect(ok.status).toBe(201);
    expect(await ok.json()).toEqual({ account: acct.root.did, carry_space: grant.carry.space });
    expect((await post(grant)).status).toBe(201); // connecting again keeps what it holds
    expect(await host.status()).toMatchObject({ account: acct.root.did, carry_space: grant.carry.space, spaces: 0 });
  });

  it("docs/hosting.md: an account's status answers only a request proven with its carry space's read key — 401 without, 403 with a wrong one or for an account the host does not carry, nothing about the account", async () => {
    const { acct, host } = await connected();
    const url = `${RELAY}/minca/v1/host/accounts/${acct.root.did}`;
    const none = await SELF.fetch(url);
    expect(none.status).toBe(401);
    expect(((await none.json()) as any).error.code).toBe("read_proof_required");
    const { readProofHeaders } = await import("../../shared/minca/read-proof");
    const other = makeSpace(acct, "private");
    const wrong = await SELF.fetch(url, { headers: readProofHeaders(readSeedOf(other.key!), host.carry!.id) });
    expect(wrong.status).toBe(403);
    const wrongBody = await wrong.text();
    expect(wrongBody).not.toContain(host.carry!.id);
    // a proof for an account the host does not know answers exactly as a wrong one
    const stranger = await newAccount();
    const unknown = await SELF.fetch(`${RELAY}/minca/v1/host/accounts/${stranger.root.did}`, {
      headers: readProofHeaders(readSeedOf(other.key!), other.id),
    });
    expect(unknown.status).toBe(403);
    expect(await unknown.text()).toBe(wrongBody.replace(acct.root.did, stranger.root.did));
    expect(await host.status()).toMatchObject({ account: acct.root.did, carry_space: host.carry!.id });
  });

  it("docs/hosting.md: a binding is proven only by a version under the account's /account/write authority in its carry space; an unproven one expires after unproven_binding_seconds and leaves nothing", async () => {
    const acct = await newAccount();
    const squatter = new HostConnection(acct, RELAY, { fetch: fetchSelf });
    await squatter.connect(0);
    // meanwhile another grant may replace it (the account's real one)
    const real = new HostConnection(acct, RELAY, { fetch: fetchSelf });
    expect(await real.connect(1)).toMatchObject({ carry_space: real.carry!.id });
    const stub = accountStub(acct.root.did);
    const alarm = await runInDurableObject(stub, (_i, st) => st.storage.getAlarm());
    expect(alarm).toBeGreaterThan(Date.now() + (MINCA_HOST_LIMITS.unproven_binding_seconds - 60) * 1000);
    // an hour on, nothing arrived: the binding expires, and the objects keep nothing
    await runInDurableObject(stub, (_i, st) =>
      st.storage.sql.exec(
        "UPDATE meta SET value = ? WHERE key = 'bound_at'",
        String(Date.now() - MINCA_HOST_LIMITS.unproven_binding_seconds * 1000 - 1),
      ),
    );
    await runDurableObjectAlarm(stub);
    const tables = (s: DurableObjectStub) =>
      runInDurableObject(s, (_i, st) =>
        st.storage.sql
          .exec<{ name: string }>(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'",
          )
          .toArray(),
      );
    expect(await tables(stub)).toEqual([]);
    expect(await rows(spaceStub(real.carry!.id), ["log", "carriers", "meta"])).toEqual({ log: 0, carriers: 0, meta: 0 });
    await expect(real.status()).rejects.toMatchObject({ status: 403 });
    // proven once the account writes: then no grant replaces it and it never expires
    await real.connect(1);
    expect(await real.pass(makeSpace(acct, "public"))).toMatchObject({ accepted: true });
    await runInDurableObject(stub, (_i, st) => st.storage.sql.exec("UPDATE meta SET value = ? WHERE key = 'bound_at'", "0"));
    await runDurableObjectAlarm(stub);
    expect(await real.status()).toMatchObject({ spaces: 1 });
    await expect(squatter.connect(0)).rejects.toMatchObject({ status: 409 });
  });
});

describe("admission (MINCA_HOST_ADMISSION)", () => {
  const post = async (settings: Record<string, string>, grant: unknown, headers: Record<string, string> = {}) => {
    const { default: worker } = await import("../../workers/index");
    const { createExecutionContext, waitOnExecutionContext } = await import("cloudflare:test");
    const ctx = createExecutionContext();
    const res = await worker.fetch(
      new Request(`${RELAY}/minca/v1/host/accounts`, { method: "POST", body: JSON.stringify(grant), headers }),
      { ...env, ...settings },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    return res;
  };

  it("the CarryGrant POST admits as the operator set: allowlist only its dids, token only with its Bearer token; a refused grant stores nothing", async () => {
    const listed = await newAccount();
    const other = await newAccount();
    const nobody = await newAccount(); // listed, never posting
    const grantOf = async (a: typeof listed) => new HostConnection(a, RELAY, { fetch: fetchSelf }).grant();
    const allow = { MINCA_HOST_ADMISSION: "allowlist", MINCA_HOST_ALLOWLIST: `${nobody.root.did},${listed.root.did}` };
    const refused = await post(allow, await grantOf(other));
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as any).error.code).toBe("not_admitted");
    expect((await post(allow, await grantOf(listed))).status).toBe(201);
    const token = { MINCA_HOST_ADMISSION: "token", MINCA_HOST_ADMISSION_TOKEN: "handed-out" };
    const none = await post(token, await grantOf(other));
    expect(none.status).toBe(401);
    expect(((await none.json()) as any).error.code).toBe("admission_required");
    expect((await post(token, await grantOf(other), { authorization: "Bearer wrong" })).status).toBe(403);
    const stub = accountStub(other.root.did);
    expect(
      await runInDurableObject(stub, (_i, st) => st.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'meta'").toArray()),
    ).toEqual([]);
    expect((await post(token, await grantOf(other), { authorization: "Bearer handed-out" })).status).toBe(201);
    // the information document says which
    const { default: worker } = await import("../../workers/index");
    const { createExecutionContext } = await import("cloudflare:test");
    const doc = (await (
      await worker.fetch(
        new Request(`${RELAY}/`, { headers: { accept: "application/json" } }),
        { ...env, ...token },
        createExecutionContext(),
      )
    ).json()) as any;
    expect(doc.protocols.minca.host.admission).toBe("token");
  });
});

describe("one carry space per account", () => {
  it("a grant for another carry space replaces one the account never wrote in, and is refused (409) once it has", async () => {
    const acct = await newAccount();
    const first = new HostConnection(acct, RELAY, { fetch: fetchSelf });
    await first.connect(0);
    const second = new HostConnection(acct, RELAY, { fetch: fetchSelf });
    expect(await second.connect(1)).toMatchObject({ carry_space: second.carry!.id });
    expect(await second.pass(makeSpace(acct, "public"))).toMatchObject({ accepted: true });
    await expect(first.connect(0)).rejects.toMatchObject({ status: 409, code: "carry_space_conflict" });
    expect(await second.status()).toMatchObject({ carry_space: second.carry!.id, spaces: 1 });
  });
});

describe("docs/hosting.md: carried spaces", () => {
  it("a space is carried only once a pass names it; its log survives eviction of both objects", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    const v = await writeVersion(acct, s, { collection: "std.note", key: "n1", body: { text: "hello" } });
    const before = await SELF.fetch(`${RELAY}/minca/v1/spaces/${s.id}/versions`, { method: "POST", body: JSON.stringify([v]) });
    expect(before.status).toBe(404);
    expect(await host.pass(s)).toMatchObject({ accepted: true });
    expect(await host.post(s.id, [v, v])).toEqual([
      { id: v.id, accepted: true, seq: 1 },
      { id: v.id, accepted: true, seq: 1 },
    ]);
    await evictDurableObject(spaceStub(s.id));
    await evictDurableObject(accountStub(acct.root.did));
    expect(await host.post(s.id, [v])).toEqual([{ id: v.id, accepted: true, seq: 1 }]);
    const page = await host.fetchLog(s);
    expect(page.items.map((i) => i.version)).toEqual([JSON.parse(JSON.stringify(v))]);
    // the carry space's pass counts too: the account's bytes are all it has the host keep
    expect(await host.status()).toMatchObject({ spaces: 1, versions: 2 });
  });

  it("the same version posted twice at once is stored once: both answers name its one seq", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    await host.pass(s);
    const v = await writeVersion(acct, s, { collection: "c", key: "k", body: { n: 1 } });
    const [a, b] = await Promise.all([host.post(s.id, [v]), host.post(s.id, [v])]);
    expect(a).toEqual(b);
    expect((await host.fetchLog(s)).items).toHaveLength(1);
  });

  it("a batch of versions the log holds and new ones: each held one answers its own seq (one look-up for the batch), the new one is appended", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    await host.pass(s);
    const [v1, v2, v3] = [
      await writeVersion(acct, s, { collection: "c", key: "a", body: { n: 1 } }),
      await writeVersion(acct, s, { collection: "c", key: "b", body: { n: 2 } }),
      await writeVersion(acct, s, { collection: "c", key: "c", body: { n: 3 } }),
    ];
    const seqOf = (r: { accepted: boolean }) => (r as { seq?: number }).seq;
    const first = await host.post(s.id, [v1, v2]);
    expect(first.map((r) => r.accepted)).toEqual([true, true]);
    const [s1, s2] = [seqOf(first[0]) ?? -1, seqOf(first[1]) ?? -1];
    const again = await host.post(s.id, [v2, v3, v1, v3]);
    expect(again.map((r) => ({ id: r.id, seq: seqOf(r) }))).toEqual([
      { id: v2.id, seq: s2 },
      { id: v3.id, seq: s2 + 1 },
      { id: v1.id, seq: s1 },
      { id: v3.id, seq: s2 + 1 },
    ]);
    expect((await host.fetchLog(s)).items).toHaveLength(3);
  });

  it("a page of the log hands back each version exactly as it was posted: its text, not the host's re-serialisation of it", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    await host.pass(s);
    const v = await writeVersion(acct, s, { collection: "c", key: "k", body: { text: "caf\u00e9 \u2028" } });
    const w = await writeVersion(acct, s, { collection: "c", key: "k2", body: { n: 2 } });
    // Posted pretty-printed, with an escape the writer chose: the same JSON value, other text.
    const posted = JSON.stringify([v, w], null, 2).replace('"collection": "c"', '"collection": "\\u0063"');
    const rawV = posted.slice(posted.indexOf("{"), posted.indexOf("\n  },") + 4);
    expect(JSON.parse(rawV)).toEqual(JSON.parse(JSON.stringify(v)));
    const res = await SELF.fetch(`${RELAY}/minca/v1/spaces/${s.id}/versions`, { method: "POST", body: posted });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { results: Array<{ accepted: boolean }> }).results.map((r) => r.accepted)).toEqual([true, true]);
    const page = await SELF.fetch(`${RELAY}/minca/v1/spaces/${s.id}/versions?after=0&limit=1`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^application\/json/);
    expect(page.headers.get("cache-control")).toBe("no-store");
    const text = await page.text();
    expect(text).toBe(`{"items":[{"seq":1,"version":${rawV}}],"next":1,"more":true,"oldest_seq":1}`);
    // The client reads it as the versions it wrote.
    const log = await host.fetchLog(s);
    expect(log.items.map((i) => i.version)).toEqual(JSON.parse(JSON.stringify([v, w])));
    expect(log).toMatchObject({ next: 2, more: false, oldest_seq: 1 });
  });

  it("a private space answers only a request proven with its read key: none 401, wrong 403", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "private");
    expect(await host.pass(s)).toMatchObject({ accepted: true });
    const v = await writeVersion(acct, s, { collection: "std.note", key: "n1", body: { secret: 1 } });
    expect(await host.post(s.id, [v])).toMatchObject([{ accepted: true, seq: 1 }]);
    const url = `${RELAY}/minca/v1/spaces/${s.id}/versions`;
    expect((await SELF.fetch(url)).status).toBe(401);
    const other = makeSpace(acct, "private");
    const wrong = new HostConnection(acct, RELAY, { fetch: fetchSelf });
    await expect(wrong.fetchLog({ ...s, key: other.key })).rejects.toMatchObject({ status: 403, code: "read_proof_invalid" });
    expect((await host.fetchLog(s)).items).toHaveLength(1);
  });

  it("a refused version leaves nothing: a records-only note writing a pass, a pass for a space its constitution does not hash to", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    const recordsOnly = new HostConnection(await withNote(acct, "/record"), RELAY, { fetch: fetchSelf });
    recordsOnly.carry = host.carry;
    expect(await recordsOnly.pass(s)).toMatchObject({ accepted: false, reason: "not_account_write" });
    const t = makeSpace(acct, "public");
    const mismatch = await writeVersion(acct, host.carry!, { collection: "sys.pass", key: passKey(s.id), body: passBody(t) });
    expect(await host.post(host.carry!.id, [mismatch])).toMatchObject([{ accepted: false, reason: "pass_space_mismatch" }]);
    expect(await rows(spaceStub(host.carry!.id), ["log"])).toEqual({ log: 0 });
    expect(await host.status()).toMatchObject({ spaces: 0 });
    expect(await rows(spaceStub(s.id), ["carriers", "log", "meta"])).toEqual({ carriers: 0, log: 0, meta: 0 });
  });

  it("the pass rule: a stranger's pass with the latest at the host takes (max_future_ms ahead) and its own read key displaces no one — a proof under any carrying account's current read key reads", async () => {
    const a = await connected();
    const stranger = await connected();
    const s = makeSpace(a.acct, "private", [a.acct.root.did]);
    expect(await a.host.pass(s)).toMatchObject({ accepted: true });
    const v = await writeVersion(a.acct, s, { collection: "std.note", key: "n", body: { secret: 1 } });
    expect(await a.host.post(s.id, [v])).toMatchObject([{ accepted: true }]);
    const { readKeyDid, readSeedOf } = await import("../../shared/minca/space");
    const strangerKey = new Uint8Array(32).fill(9);
    const takeover = await writeVersion(stranger.acct, stranger.host.carry!, {
      collection: "sys.pass",
      key: passKey(s.id),
      body: passBody({ constitution: s.constitution, key: strangerKey }, readKeyDid(readSeedOf(strangerKey))),
      at: Date.now() + MINCA_HOST_LIMITS.max_future_ms - 60_000,
    });
    expect(await stranger.host.post(stranger.host.carry!.id, [takeover])).toMatchObject([{ accepted: true }]);
    // the member still reads, with the space's own read key, and goes on writing
    expect((await a.host.fetchLog(s)).items).toHaveLength(1);
    const w = await writeVersion(a.acct, s, { collection: "std.note", key: "n2", body: { secret: 2 } });
    expect(await a.host.post(s.id, [w])).toMatchObject([{ accepted: true, seq: 2 }]);
    expect((await a.host.fetchLog(s)).items).toHaveLength(2);
    // the stranger's own pass proves its own key (docs/hosting.md accepts that cost: ciphertext only)
    expect((await stranger.host.fetchLog({ ...s, key: strangerKey })).items).toHaveLength(2);
    // the member's account, writing a later pass of its own, changes nothing for the stranger and vice versa
    expect(await a.host.pass(s)).toMatchObject({ accepted: true });
    expect((await a.host.fetchLog(s)).items).toHaveLength(2);
  });

  it("the Minca protocol §4.2: a deleted pass stops carrying that space for that account; with no other carrier the space is forgotten", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    await host.pass(s);
    await host.post(s.id, [await writeVersion(acct, s, { collection: "c", key: "k", body: {} })]);
    expect(await host.unpass(s)).toMatchObject({ accepted: true });
    expect(await host.status()).toMatchObject({ spaces: 0 });
    await expect(host.post(s.id, [await writeVersion(acct, s, { collection: "c", key: "k2", body: {} })])).rejects.toMatchObject({
      status: 404,
    });
    expect(await rows(spaceStub(s.id), ["log", "carriers", "meta"])).toEqual({ log: 0, carriers: 0, meta: 0 });
  });

  it("over a space's bound the whole request is refused with 507 quota_exceeded", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    await host.pass(s);
    await runInDurableObject(spaceStub(s.id), (_i, state) => {
      state.storage.sql.exec("INSERT INTO log (id, bytes, version) VALUES ('bfiller', ?, '{}')", MINCA_HOST_LIMITS.max_space_bytes - 10);
    });
    const v = await writeVersion(acct, s, { collection: "c", key: "k", body: { x: 1 } });
    await expect(host.post(s.id, [v])).rejects.toMatchObject({ status: 507, code: "quota_exceeded" });
  });
});

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

describe("docs/hosting.md: the account's own spaces", () => {
  it("in the carry space and in a space whose pass says own: true, a records-only note is refused with not_account_write; /account/write counts", async () => {
    const { acct, host } = await connected();
    const registry = makeSpace(acct, "private");
    expect(await host.pass(registry, undefined, { own: true })).toMatchObject({ accepted: true });
    const program = await withNote(acct, "/record");
    const programHost = new HostConnection(program, RELAY, { fetch: fetchSelf });
    programHost.carry = host.carry;
    const joined = await writeVersion(program, registry, { collection: "sys.joined", key: "space:x", body: { v: 1 } });
    expect(await programHost.post(registry.id, [joined])).toMatchObject([{ accepted: false, reason: "not_account_write" }]);
    expect(await programHost.pass(makeSpace(acct, "public"))).toMatchObject({ accepted: false, reason: "not_account_write" });
    const device = await withNote(acct, "/account");
    const ok = await writeVersion(device, registry, { collection: "sys.joined", key: "space:x", body: { v: 1 } });
    expect(await host.post(registry.id, [ok])).toMatchObject([{ accepted: true, seq: 1 }]);
    // in a space that is not the account's own, the records-only program writes as before
    const shared = makeSpace(acct, "public");
    await host.pass(shared);
    expect(
      await programHost.post(shared.id, [await writeVersion(program, shared, { collection: "std.note", key: "n", body: {} })]),
    ).toMatchObject([{ accepted: true }]);
  });

  it("own: true counts only for a space the account founded alone: a pass saying so of a shared space is refused (own_space_mismatch)", async () => {
    const { acct, host } = await connected();
    const other = await newAccount();
    const shared = makeSpace(acct, "public", [acct.root.did, other.root.did]);
    expect(await host.pass(shared, undefined, { own: true })).toMatchObject({ accepted: false, reason: "own_space_mismatch" });
    expect(await host.status()).toMatchObject({ spaces: 0 });
  });
});

describe("carriers per space", () => {
  it("at most max_carriers_per_space accounts carry one space: the next account's pass is refused with too_many_carriers (the SDK: not_carried)", async () => {
    const first = await connected();
    const s = makeSpace(first.acct, "public");
    await first.host.pass(s);
    await runInDurableObject(spaceStub(s.id), (_i, state) => {
      for (let i = 1; i < MINCA_HOST_LIMITS.max_carriers_per_space; i++) {
        state.storage.sql.exec("INSERT INTO carriers (account, at, read_key, own) VALUES (?, 0, NULL, 0)", `did:key:filler${i}`);
      }
    });
    const late = await connected();
    await expect(late.host.pass(s)).rejects.toMatchObject({ code: "not_carried" });
    expect(await late.host.status()).toMatchObject({ spaces: 0 });
    expect(await first.host.pass(s)).toMatchObject({ accepted: true }); // a carrier already there writes its pass again
  });
});

describe("quotas: an account pays for what it writes", () => {
  const fill = (did: string, bytes: number) =>
    runInDurableObject(accountStub(did), (_i, state) => {
      state.storage.sql.exec("INSERT INTO usage (space, versions, bytes) VALUES ('filler', 1, ?)", bytes);
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
    await fill(acct.root.did, MINCA_HOST_LIMITS.max_account_bytes - ((await host.status()) as any).bytes - Math.floor(2.5 * size));
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

describe("docs/hosting.md: wakes and receivers", () => {
  /** A browser-like subscription and an in-process push service answering `answers` (then 201). */
  async function pushService(did: string, answers: number[] = []) {
    const { p256 } = await import("@noble/curves/nist.js");
    const { decryptPushMessage } = await import("../../shared/webpush/encrypt");
    const { base64urlEncode, randomBytes } = await import("../../shared/encoding");
    const uaPrivate = p256.utils.randomSecretKey();
    const auth = randomBytes(16);
    const got: Array<{ headers: Record<string, string>; body: string }> = [];
    await runInDurableObject(accountStub(did) as DurableObjectStub<TestMincaAccount>, (inst: TestMincaAccount) => {
      inst.fetchWith = async (_url: string, init: RequestInit) => {
        got.push({
          headers: init.headers as Record<string, string>,
          body: new TextDecoder().decode(decryptPushMessage(init.body as Uint8Array, uaPrivate, auth)),
        });
        return new Response(null, { status: answers.shift() ?? 201 });
      };
    });
    const push = {
      endpoint: `https://push.example/${Math.random().toString(36).slice(2)}`,
      keys: { p256dh: base64urlEncode(p256.getPublicKey(uaPrivate, false)), auth: base64urlEncode(auth) },
    };
    return { push, got };
  }

  it("a matching version sends one push per receiver after it is answered; Topic from the version id; TTL one day; a non-matching one sends nothing", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    await host.pass(s);
    const svc = await pushService(acct.root.did);
    expect(
      await host.wake("wake:1", { v: 1, name: "New message", spaces: [s.id], collection: "std.message", topics: ["club"] }),
    ).toMatchObject({ accepted: true });
    expect(await host.receiver("phone", svc.push)).toMatchObject({ accepted: true });
    expect(await host.status()).toMatchObject({ wakes: 1, receivers: 1 });
    const miss = await writeVersion(acct, s, { collection: "std.message", key: "m0", body: {}, topics: ["other"] });
    const hit = await writeVersion(acct, s, { collection: "std.message", key: "m1", body: { t: 1 }, topics: ["club", "x"] });
    await host.post(s.id, [miss, hit]);
    // The space hands the arrivals to the account after answering: the push queued (or already sent) is the known point.
    await waitFor(async () => svc.got.length > 0 || (await rows(accountStub(acct.root.did), ["pushes"])).pushes > 0, {
      what: "the push queued",
    });
    await runDurableObjectAlarm(accountStub(acct.root.did));
    await waitFor(() => svc.got.length === 1, { what: "the push" }); // the alarm may also fire by itself
    expect(svc.got).toHaveLength(1);
    expect(JSON.parse(svc.got[0].body)).toEqual(JSON.parse(JSON.stringify(hit)));
    const { wakeTopic } = await import("../../shared/minca/wake");
    expect(svc.got[0].headers).toMatchObject({ TTL: "86400", Topic: wakeTopic(hit.id) });
  });

  it("a gone endpoint (410) is not pushed to again until its record is written again; 503 is retried by the alarm", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    await host.pass(s);
    const svc = await pushService(acct.root.did, [503, 201, 410]);
    await host.wake("wake:1", { v: 1, name: "any", spaces: "all", collection: "c" });
    await host.receiver("phone", svc.push);
    const send = async (key: string) => {
      await host.post(s.id, [await writeVersion(acct, s, { collection: "c", key, body: {} })]);
      await new Promise((r) => setTimeout(r, 50));
      await runDurableObjectAlarm(accountStub(acct.root.did));
    };
    // The alarm may also fire by itself (set to now): wait for the push rather than assume which run sends it.
    const pushes = (k: number) => waitFor(() => svc.got.length === k, { what: `${k} pushes` });
    await send("a"); // 503
    await pushes(1);
    await runInDurableObject(accountStub(acct.root.did), (_i, st) => st.storage.sql.exec("UPDATE pushes SET next_at = 0"));
    await runDurableObjectAlarm(accountStub(acct.root.did)); // retried: 201
    await pushes(2);
    await send("b"); // 410
    await pushes(3);
    await waitFor(async () => (await host.status()).receivers === 1 && (await rows(accountStub(acct.root.did), ["pushes"])).pushes === 0, {
      what: "the 410 settled",
    });
    await send("c"); // not pushed
    expect(svc.got).toHaveLength(3);
    expect(await host.status()).toMatchObject({ receivers: 1 });
    await host.receiver("phone", svc.push); // written again
    await send("d");
    await pushes(4);
  });

  it("docs/mailbox.md: a sys.receiver whose endpoint the relay may not push to does not count; its version is refused (invalid_receiver)", async () => {
    const { acct, host } = await connected();
    const svc = await pushService(acct.root.did);
    for (const endpoint of [
      "http://127.0.0.1:9/push/x",
      "https://127.0.0.1/push/x",
      "https://[::1]/push/x",
      "https://localhost/push/x",
      "https://push.example:8443/x",
      "https://relay.test/minca/v1/mailbox/aaaaaaaaaaaaaaaaaaaa", // this relay, as the request reached it
    ]) {
      const r = await host.receiver("phone", { ...svc.push, endpoint });
      expect(r, endpoint).toMatchObject({ accepted: false, reason: "invalid_receiver" });
    }
    expect(await host.status()).toMatchObject({ receivers: 0 });
    expect(await host.receiver("phone", svc.push)).toMatchObject({ accepted: true });
    expect(await host.status()).toMatchObject({ receivers: 1 });
  });

  it("bound: at most pushes_per_minute pushes per account per minute; the rest wait for the next minute", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    await host.pass(s);
    const svc = await pushService(acct.root.did);
    await host.wake("wake:1", { v: 1, name: "any", spaces: "all", collection: "c" });
    await host.receiver("phone", svc.push);
    const { MINCA_WAKE_LIMITS } = await import("../../shared/limits");
    await runInDurableObject(accountStub(acct.root.did), (_i, st) => {
      st.storage.sql.exec(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('push_minute', ?), ('push_count', ?)",
        String(Math.floor(Date.now() / 60_000)),
        String(MINCA_WAKE_LIMITS.pushes_per_minute),
      );
    });
    if (Date.now() % 60_000 > 58_000) return; // too close to a minute's end to tell
    await host.post(s.id, [await writeVersion(acct, s, { collection: "c", key: "x", body: {} })]);
    // The push is queued (the known point), and the alarm, run, leaves it queued: the minute's budget is spent.
    await waitFor(async () => (await rows(accountStub(acct.root.did), ["pushes"])).pushes === 1, { what: "the push queued" });
    await runDurableObjectAlarm(accountStub(acct.root.did));
    expect(await rows(accountStub(acct.root.did), ["pushes"])).toEqual({ pushes: 1 });
    expect(svc.got).toHaveLength(0);
    const alarm = await runInDurableObject(accountStub(acct.root.did), (_i, st) => st.storage.getAlarm());
    expect(alarm).toBe((Math.floor(Date.now() / 60_000) + 1) * 60_000);
  });
});
