// The Minca host inside workerd (docs/hosting.md): the host's identity, connecting an account,
// admission of CarryGrants, and one carry space per account. Carried spaces, the account's
// bookkeeping (revocations, quotas, links, carry:closed) and wakes have their own files
// (minca-host-spaces, minca-host-accounts, minca-host-wakes).
import { SELF, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { HostConnection, makeSpace, newAccount } from "../../clients/minca/host";
import { readSeedOf } from "../../shared/minca/space";
import { MINCA_HOST_LIMITS } from "../../shared/limits";
import { runDeferred } from "../helpers/deferred";
import { RELAY, accountStub, connected, fetchSelf, rows, spaceStub } from "./minca-host-setup";

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
    await runDeferred(stub); // the grants' report; the binding's expiry alarm stays
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
