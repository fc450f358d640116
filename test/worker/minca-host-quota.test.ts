// No hosting row outside the ledger (docs/hosting.md, "Quotas"; docs/hostile.md): a binding (an
// unproven one included) and a link row are charged to the host-wide total before they are
// stored, so with the total full they are refused storage_full and leave nothing; grants and
// account reads have per-client buckets across every account.
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { HostConnection, makeSpace, newAccount, writeVersion } from "../../clients/minca/host";
import { resetTotals, roomFor } from "../helpers/ledger-totals";
import { LINK } from "../../shared/minca/carry";
import { base64urlEncode, randomBytes } from "../../shared/encoding";
import { MINCA_HOST_LIMITS, STORAGE_LIMITS } from "../../shared/limits";
import { ownAddress } from "../helpers/client-address";

const RELAY = "http://relay.test";
/** A fetch from one client address of its own (cf-connecting-ip), so no other test's bucket is shared. */
const fetchFrom = (address = ownAddress()) =>
  ((input: RequestInfo | URL, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    headers.set("cf-connecting-ip", address);
    return SELF.fetch(input as string, { ...init, headers });
  }) as typeof fetch;
const accountStub = (did: string) => env.MINCA_ACCOUNT.get(env.MINCA_ACCOUNT.idFromName(did));
const spaceStub = (id: string) => env.MINCA_SPACE.get(env.MINCA_SPACE.idFromName(id));
const tables = (stub: DurableObjectStub) =>
  runInDurableObject(stub, (_i, st) =>
    st.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%' AND name NOT LIKE '_cf_%'")
      .toArray()
      .map((r) => r.name),
  );

async function connected(fetch = fetchFrom()) {
  const acct = await newAccount();
  const host = new HostConnection(acct, RELAY, { fetch });
  await host.connect();
  return { acct, host };
}

describe("no hosting row outside the ledger", () => {
  it("storage.database_bytes_space: the first version an account pays for in a space charges the space's database to its share of the host total; the next one does not", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "public");
    await host.pass(s);
    const bytes = async () => ((await host.status()) as { bytes: number }).bytes;
    const [v1, v2] = await Promise.all(["k1", "k2"].map((key) => writeVersion(acct, s, { collection: "c", key, body: { pad: "p" } })));
    const before = await bytes();
    expect(await host.post(s.id, [v1])).toMatchObject([{ accepted: true }]);
    const first = (await bytes()) - before;
    expect(await host.post(s.id, [v2])).toMatchObject([{ accepted: true }]);
    const second = (await bytes()) - before - first;
    expect(first - second).toBe(STORAGE_LIMITS.database_bytes_space);
    // what the account's lease keeps (once the ledger takes its slack back) holds it too
    expect(await accountStub(acct.root.did).leaseReclaim()).toBe(STORAGE_LIMITS.database_bytes_host + (await bytes()));
  });

  it("storage.host_bytes: with the host's total full, a CarryGrant is refused 507 storage_full and leaves no table on the account or its carry space", async () => {
    await roomFor("host", 0);
    try {
      const acct = await newAccount();
      const host = new HostConnection(acct, RELAY, { fetch: fetchFrom() });
      await expect(host.connect()).rejects.toMatchObject({ status: 507, code: "storage_full" });
      expect(await tables(accountStub(acct.root.did))).toEqual([]);
      expect(await tables(spaceStub(host.carry!.id))).toEqual([]);
    } finally {
      await resetTotals();
    }
    // with room again, the same grant is taken
    const { host } = await connected();
    expect(await host.status()).toMatchObject({ spaces: 0 });
  });

  it("a binding is charged to the host's total (its rows and the carry space's), unproven as it is: the account's status counts it", async () => {
    const { acct, host } = await connected();
    const lease = await accountStub(acct.root.did).leaseHeld();
    const bytes = (await host.status()).bytes as number;
    expect(bytes).toBeGreaterThan(6 * STORAGE_LIMITS.row_overhead_bytes);
    expect(lease).toBeGreaterThanOrEqual(bytes);
  });

  it("storage.host_bytes: a link row is charged — with the account's lease spent and the host's total full, a sys.link is refused storage_full and no link is kept", async () => {
    const { acct, host } = await connected();
    const stub = accountStub(acct.root.did);
    const blob = randomBytes(20_000);
    const link = await writeVersion(acct, host.carry!, {
      collection: LINK,
      key: "link:big",
      body: { v: 1, blob: base64urlEncode(blob), until: Math.floor(Date.now() / 1000) + 600 },
    });
    const versionBytes = JSON.stringify(link).length;
    await roomFor("host", 0);
    try {
      // the lease has room for the version (in the log) but not for the link row besides it
      const lease = await stub.leaseHeld();
      const used = (await host.status()).bytes as number;
      await runInDurableObject(stub, (_i, state) => {
        // (the lease also covers the account's database, storage.database_bytes_host, the filler
        // space's, and the carry space's when the link is the first version the account pays there:
        // storage.database_bytes_space)
        const carryPaid =
          state.storage.sql.exec("SELECT 1 FROM usage WHERE space = ? AND versions > 0", host.carry!.id).toArray().length > 0;
        const spaces = STORAGE_LIMITS.database_bytes_space * (carryPaid ? 1 : 2);
        const room = lease - STORAGE_LIMITS.database_bytes_host - spaces - used - versionBytes - 5_000;
        state.storage.sql.exec("INSERT INTO usage (space, versions, bytes) VALUES ('filler', 1, ?)", room);
      });
      const [answer] = await host.post(host.carry!.id, [link]);
      expect(answer).toMatchObject({ accepted: false, reason: "storage_full" });
      expect(await host.status()).toMatchObject({ links: 0 });
      expect((await host.fetchLog(host.carry!)).items.map((i) => i.version.id)).not.toContain(link.id);
    } finally {
      await resetTotals();
    }
  });

  it("a link row counts its blob: the account's charge grows by the version and, besides it, the link row's blob and overhead", async () => {
    const { host } = await connected();
    const before = (await host.status()).bytes as number;
    const blob = randomBytes(4_000);
    expect(await host.link("link:a", blob, Math.floor(Date.now() / 1000) + 600)).toMatchObject({ accepted: true });
    const after = (await host.status()).bytes as number;
    // the version in the carry space's log, and the link row (blob, overhead) besides it
    expect(after - before).toBeGreaterThan(blob.length * 2 + STORAGE_LIMITS.row_overhead_bytes);
  });
});

describe("per-client buckets on the account endpoints", () => {
  it(`40 CarryGrants from one client in a burst: past grants_burst (${MINCA_HOST_LIMITS.grants_burst}) 429 rate_limited with Retry-After, and the refused ones make no object; another client is served`, async () => {
    const from = fetchFrom();
    const accounts = await Promise.all(Array.from({ length: 40 }, () => newAccount()));
    const conns = accounts.map((a) => new HostConnection(a, RELAY, { fetch: from }));
    const grants = await Promise.all(conns.map((h) => h.grant()));
    const answers = await Promise.all(
      grants.map((g) =>
        from(`${RELAY}/minca/v1/host/accounts`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(g),
        }),
      ),
    );
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 201).length).toBeLessThanOrEqual(MINCA_HOST_LIMITS.grants_burst + 1);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(40 - MINCA_HOST_LIMITS.grants_burst - 1);
    const refused = answers.findIndex((r) => r.status === 429);
    expect(Number(answers[refused].headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(((await answers[refused].json()) as any).error.code).toBe("rate_limited");
    for (let i = 0; i < answers.length; i++) {
      if (answers[i].status !== 429) continue;
      expect(await tables(accountStub(accounts[i].root.did))).toEqual([]);
      expect(await tables(spaceStub(conns[i].carry!.id))).toEqual([]);
    }
    // another client address has its own bucket
    const other = await connected(fetchFrom());
    expect(await other.host.status()).toMatchObject({ spaces: 0 });
  });

  it(`account status GETs: past account_reads_burst (${MINCA_HOST_LIMITS.account_reads_burst}) from one client, 429 rate_limited with Retry-After, across every account`, async () => {
    const from = fetchFrom();
    const did = (await newAccount()).root.did;
    const other = (await newAccount()).root.did; // made first: making it takes time the bucket refills in
    const n = MINCA_HOST_LIMITS.account_reads_burst + 16;
    const answers = await Promise.all(Array.from({ length: n }, () => from(`${RELAY}/minca/v1/host/accounts/${encodeURIComponent(did)}`)));
    expect(answers.filter((r) => r.status === 401).length).toBeGreaterThanOrEqual(MINCA_HOST_LIMITS.account_reads_burst);
    const last = answers.find((r) => r.status === 429)!;
    expect(last).toBeDefined();
    expect(Number(last.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // the bucket is the client's, not the account's: another did is refused too (a few at once:
    // the bucket refills at its rate meanwhile, so one of them may be let through)
    const others = await Promise.all(Array.from({ length: 8 }, () => from(`${RELAY}/minca/v1/host/accounts/${encodeURIComponent(other)}`)));
    expect(others.filter((r) => r.status === 429).length).toBeGreaterThanOrEqual(4);
    expect((await fetchFrom()(`${RELAY}/minca/v1/host/accounts/${encodeURIComponent(other)}`)).status).toBe(401);
  });

  it("in shared mode (no trusted client address) the account endpoints' buckets do not apply: one client cannot lock every account out", async () => {
    const did = (await newAccount()).root.did;
    const n = MINCA_HOST_LIMITS.account_reads_burst + 16;
    const answers = await Promise.all(
      Array.from({ length: n }, () => SELF.fetch(`${RELAY}/minca/v1/host/accounts/${encodeURIComponent(did)}`)),
    );
    expect(answers.every((r) => r.status === 401)).toBe(true);
  });
});
