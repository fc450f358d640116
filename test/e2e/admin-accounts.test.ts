// The admin API's Minca account methods through a real relay (docs/admin-api.md): edge.banaccount
// purges what the host carries for the account (every space it carries, its carry space, its
// lease of the host's total) and refuses its grants, reads and appends with 403 banned;
// edge.listbannedaccounts lists it; edge.unbanaccount lets it connect again, with nothing kept.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HostConnection, makeSpace, newAccount, writeVersion } from "../../clients/minca/host";
import { startRelay, type RelayProcess } from "../helpers/relay-process";

const TOKEN = "e2e-admin-token";
let relay: RelayProcess;

beforeAll(async () => {
  relay = await startRelay({ env: { ADMIN_TOKEN: TOKEN } });
});

afterAll(async () => {
  await relay?.stop();
});

async function call(method: string, params: unknown[] = []): Promise<any> {
  const res = await fetch(`${relay.url}/`, {
    method: "POST",
    headers: { "content-type": "application/nostr+json+rpc", authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ method, params }),
  });
  expect(res.status).toBe(200);
  return res.json();
}

const hostBytes = async () =>
  ((await call("edge.liststorageholders", [100])).result.host as Array<{ bytes: number }>).reduce((n, h) => n + h.bytes, 0);

describe("the admin API: Minca accounts", () => {
  it("edge.banaccount: the account's carried data is purged and its lease released; its grant, status and appends are refused 403 banned; edge.listbannedaccounts, edge.unbanaccount", async () => {
    const banned = await newAccount();
    const other = await newAccount();
    const host = new HostConnection(banned, relay.url);
    const otherHost = new HostConnection(other, relay.url);
    await host.connect();
    await otherHost.connect();
    const own = makeSpace(banned, "public");
    const shared = makeSpace(other, "public", [other.root.did, banned.root.did]);
    expect(await host.pass(own)).toMatchObject({ accepted: true });
    expect(await host.pass(shared)).toMatchObject({ accepted: true });
    expect(await otherHost.pass(shared)).toMatchObject({ accepted: true });
    expect(
      await host.post(own.id, [await writeVersion(banned, own, { collection: "c", key: "k", body: { pad: "b".repeat(20_000) } })]),
    ).toMatchObject([{ accepted: true }]);
    expect(
      await otherHost.post(shared.id, [await writeVersion(other, shared, { collection: "c", key: "o", body: { n: 1 } })]),
    ).toMatchObject([{ accepted: true }]);
    const before = await hostBytes();

    expect(await call("edge.banaccount", [banned.root.did, "abuse"])).toEqual({ result: true });
    expect((await call("edge.listbannedaccounts")).result).toContainEqual({ account: banned.root.did, reason: "abuse" });
    // purged: the space only it carried is gone; the shared one keeps its log for the other carrier
    expect((await fetch(`${relay.url}/minca/v1/spaces/${own.id}/versions`)).status).toBe(404);
    expect((await otherHost.fetchLog(shared)).items).toHaveLength(1);
    expect(await hostBytes()).toBeLessThan(before - 20_000);
    // refused afterwards, with a code
    await expect(host.status()).rejects.toMatchObject({ status: 403, code: "banned" });
    await expect(new HostConnection(banned, relay.url).connect()).rejects.toMatchObject({ status: 403, code: "banned" });
    await expect(
      host.post(shared.id, [await writeVersion(banned, shared, { collection: "c", key: "b", body: { n: 2 } })]),
    ).rejects.toMatchObject({
      status: 403,
      code: "banned",
    });
    // the other account writes on
    expect(
      await otherHost.post(shared.id, [await writeVersion(other, shared, { collection: "c", key: "o2", body: { n: 3 } })]),
    ).toMatchObject([{ accepted: true }]);

    expect(await call("edge.unbanaccount", [banned.root.did])).toEqual({ result: true });
    expect((await call("edge.listbannedaccounts")).result).not.toContainEqual(expect.objectContaining({ account: banned.root.did }));
    const again = new HostConnection(banned, relay.url);
    await again.connect();
    expect(await again.status()).toMatchObject({ spaces: 0, links: 0 });
  });

  it("edge.banaccount and edge.unbanaccount take a P-256 did:key: anything else is an error; supportedmethods and /openapi.json list the account methods", async () => {
    expect(await call("edge.banaccount", ["npub1notadid"])).toEqual({ error: expect.stringMatching(/params\[0\]/) });
    expect(await call("edge.unbanaccount", [42])).toEqual({ error: expect.stringMatching(/params\[0\]/) });
    expect((await call("supportedmethods")).result).toEqual(
      expect.arrayContaining(["edge.banaccount", "edge.unbanaccount", "edge.listbannedaccounts"]),
    );
    const doc = JSON.stringify(await (await fetch(`${relay.url}/openapi.json`)).json());
    for (const m of ["edge.banaccount", "edge.unbanaccount", "edge.listbannedaccounts"]) expect(doc).toContain(m);
  });
});
