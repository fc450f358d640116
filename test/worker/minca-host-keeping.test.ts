// Nothing lost in ordinary use at a Minca host (the Minca protocol §1.2, §2.10, §4.2 and the
// relay's hosting profile, "Carried spaces"): signing out keeps what the key wrote, revokes reach
// every carry space and outlive carry:closed, members are never locked out of a carrier slot,
// every stored byte is charged to one carrying account, and a deletion is never undone by an
// older version.
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { HostConnection, makeSpace, newAccount, withNote, writeVersion } from "../../clients/minca/host";
import { LINK, REVOKE, revokeKey } from "../../shared/minca/carry";
import { base64urlEncode, randomBytes, utf8Encode } from "../../shared/encoding";
import { readKeyDid, readSeedOf } from "../../shared/minca/space";
import { linkTopic } from "../../shared/minca/carry";
import { MINCA_HOST_LIMITS, STORAGE_LIMITS } from "../../shared/limits";
import { ledger } from "../helpers/ledger-totals";

const RELAY = "http://relay.test";
const fetchSelf = ((input: RequestInfo | URL, init?: RequestInit) => SELF.fetch(input as string, init)) as typeof fetch;
const spaceStub = (id: string) => env.MINCA_SPACE.get(env.MINCA_SPACE.idFromName(id));
const accountStub = (did: string) => env.MINCA_ACCOUNT.get(env.MINCA_ACCOUNT.idFromName(did));

async function connected() {
  const acct = await newAccount();
  const host = new HostConnection(acct, RELAY, { fetch: fetchSelf });
  await host.connect();
  return { acct, host };
}

const mailboxPage = async (topic: string) =>
  (await (await SELF.fetch(`${RELAY}/minca/v1/mailbox/${topic}`)).json()) as { items: Array<{ seq: number; blob: string }> };

describe("the Minca protocol §1.2, §2.10: a revoke keeps what the key wrote before it", () => {
  it("a one-device account that signs out keeps its spaces, passes, wakes and links at the host; its key can write nothing more", async () => {
    const { acct, host } = await connected();
    const s = makeSpace(acct, "private");
    expect(await host.pass(s)).toMatchObject({ accepted: true });
    const note = await writeVersion(acct, s, { collection: "std.note", key: "a", body: { t: 1 } });
    expect(await host.post(s.id, [note])).toMatchObject([{ accepted: true, seq: 1 }]);
    const blob = utf8Encode(`signout ${Math.random()}`);
    expect(await host.link("link:a", blob, Math.floor(Date.now() / 1000) + 600)).toMatchObject({ accepted: true });
    expect(await host.wake("wake:a", { v: 1, name: "a", spaces: "all", collection: "std.note" })).toMatchObject({ accepted: true });

    expect(await host.revoke(acct.session.did)).toMatchObject({ accepted: true }); // the device signs out: its only key

    expect(await host.status()).toMatchObject({ spaces: 1, links: 1, wakes: 1 });
    expect((await host.fetchLog(s)).items.map((i) => i.version.id)).toEqual([note.id]);
    expect((await mailboxPage(linkTopic(blob))).items).toMatchObject([{ seq: 0 }]);
    expect(await host.post(s.id, [await writeVersion(acct, s, { collection: "std.note", key: "b", body: {} })])).toMatchObject([
      { accepted: false, reason: "revoked" },
    ]);
    expect(await host.pass(makeSpace(acct, "public"))).toMatchObject({ accepted: false, reason: "revoked" });
  });

  it("with a cutoff, only the key's carry-space records written after it stop counting; a record falls back to its version before the cutoff", async () => {
    const { acct, host } = await connected();
    const app = await withNote(acct, "/");
    const appHost = new HostConnection(app, RELAY, { fetch: fetchSelf });
    appHost.carry = host.carry;
    const until = Math.floor(Date.now() / 1000) + 600;
    const link = (key: string, text: string, at: number) =>
      writeVersion(app, host.carry!, { collection: LINK, key, at, body: { v: 1, blob: Buffer.from(text).toString("base64url"), until } });
    const early = `early ${Math.random()}`;
    const late = `late ${Math.random()}`;
    const results = await appHost.post(host.carry!.id, [
      await link("link:kept", early, 1_000),
      await link("link:kept", late, 3_000),
      await link("link:after", late + "2", 3_000),
    ]);
    expect(results.every((r) => r.accepted)).toBe(true);
    expect(await host.status()).toMatchObject({ links: 2 });

    expect(await host.revoke(app.session.did, { cutoff: 2_000 })).toMatchObject({ accepted: true });

    expect(await host.status()).toMatchObject({ links: 1 });
    expect((await mailboxPage(linkTopic(utf8Encode(early)))).items).toMatchObject([{ seq: 0 }]);
    expect((await mailboxPage(linkTopic(utf8Encode(late)))).items).toEqual([]);
  });

  it("a revoke never drops a space's log: a pass written after the cutoff that is the space's only carrier keeps carrying it", async () => {
    const { acct, host } = await connected();
    const app = await withNote(acct, "/");
    const appHost = new HostConnection(app, RELAY, { fetch: fetchSelf });
    appHost.carry = host.carry;
    const s = makeSpace(acct, "public");
    expect(await appHost.pass(s)).toMatchObject({ accepted: true });
    const v = await writeVersion(acct, s, { collection: "c", key: "k", body: {} });
    expect(await host.post(s.id, [v])).toMatchObject([{ accepted: true }]);
    expect(await host.revoke(app.session.did, { cutoff: 0 })).toMatchObject({ accepted: true });
    expect((await host.fetchLog(s)).items.map((i) => i.version.id)).toEqual([v.id]);
    expect(await host.post(s.id, [await writeVersion(acct, s, { collection: "c", key: "k2", body: {} })])).toMatchObject([
      { accepted: true },
    ]);
  });

  it("revokes are never refused for their number: past max_revocations_per_account's old figure a revoke is stored and counts", async () => {
    const { acct, host } = await connected();
    await runInDurableObject(accountStub(acct.root.did), (_i, state) => {
      for (let i = 0; i < 1_024; i++) state.storage.sql.exec("INSERT INTO revoked (did, at) VALUES (?, 0)", `did:key:zFiller${i}`);
    });
    const app = await withNote(acct, "/");
    expect(await host.revoke(app.session.did)).toMatchObject({ accepted: true });
    const s = makeSpace(acct, "public");
    const appHost = new HostConnection(app, RELAY, { fetch: fetchSelf });
    appHost.carry = host.carry;
    expect(await appHost.pass(s)).toMatchObject({ accepted: false, reason: "revoked" });
  });
});

describe("the Minca protocol §2.10: a revoked key stays revoked at this host", () => {
  it("the host keeps an account's revoked keys across carry:closed and a new CarryGrant: carry:closed written with a revoked key is refused", async () => {
    const { acct, host } = await connected();
    const app = await withNote(acct, "/");
    expect(await host.revoke(app.session.did)).toMatchObject({ accepted: true });
    expect(await host.close()).toMatchObject({ accepted: true });
    // the account connects the host again (gen 1) without copying its revokes
    const again = new HostConnection({ ...acct, revoked: [] }, RELAY, { fetch: fetchSelf });
    await again.connect(1);
    expect(await again.pass(makeSpace(acct, "public"))).toMatchObject({ accepted: true });
    const appHost = new HostConnection(app, RELAY, { fetch: fetchSelf });
    appHost.carry = again.carry;
    expect(await appHost.close()).toMatchObject({ accepted: false, reason: "revoked" });
    expect(await again.status()).toMatchObject({ spaces: 1 });
  });

  it("no row outside the ledger: what carry:closed keeps (the revoked keys and the tombstone) stays charged to the host's total", async () => {
    const { acct, host } = await connected();
    const apps = await Promise.all([0, 1, 2].map(() => withNote(acct, "/")));
    for (const app of apps) expect(await host.revoke(app.session.did)).toMatchObject({ accepted: true });
    expect(await host.close()).toMatchObject({ accepted: true });
    const stub = accountStub(acct.root.did);
    const kept = await runInDurableObject(stub, (_i, st) => {
      const sql = st.storage.sql;
      const revoked = sql
        .exec<{ b: number }>("SELECT TOTAL(length(did)) + COUNT(*) * ? AS b FROM revoked", STORAGE_LIMITS.row_overhead_bytes)
        .one().b;
      const tomb = sql
        .exec<{ b: number }>(
          "SELECT TOTAL(length(value)) + COUNT(*) * ? AS b FROM meta WHERE key LIKE 'closed_%'",
          STORAGE_LIMITS.row_overhead_bytes,
        )
        .one().b;
      return revoked + tomb;
    });
    expect(kept).toBeGreaterThan(3 * STORAGE_LIMITS.row_overhead_bytes);
    const lease = await runInDurableObject(ledger(), (_i, st) =>
      st.storage.sql
        .exec<{ bytes: number; held: number }>("SELECT bytes, held FROM leases WHERE kind = 'host' AND holder = ?", stub.id.toString())
        .toArray(),
    );
    expect(lease).toHaveLength(1);
    expect(lease[0].held).toBeGreaterThanOrEqual(kept); // at least: a holder tells the ledger what it holds when its lease changes
    expect(lease[0].bytes).toBeGreaterThanOrEqual(kept);
  });

  it("the SDK copies the account's known revokes into a new carry space before anything else", async () => {
    const { acct, host } = await connected();
    const app = await withNote(acct, "/");
    expect(await host.revoke(app.session.did, { cutoff: 5 })).toMatchObject({ accepted: true });
    expect(await host.close()).toMatchObject({ accepted: true });
    const again = new HostConnection(acct, RELAY, { fetch: fetchSelf });
    await again.connect(1);
    const first = (await again.fetchLog(again.carry!)).items[0].version;
    expect(first).toMatchObject({ collection: REVOKE, key: revokeKey(app.session.did) });
  });
});

describe("carrier slots: members are never locked out", () => {
  it("a pass proven with the constitution's own read key takes the slot of the most recently added pass that is not", async () => {
    const member = await connected();
    const s = makeSpace(member.acct, "private");
    expect(await member.host.pass(s)).toMatchObject({ accepted: true });
    await runInDurableObject(spaceStub(s.id), (_i, state) => {
      for (let i = 2; i < MINCA_HOST_LIMITS.max_carriers_per_space; i++) {
        state.storage.sql.exec(
          "INSERT INTO carriers (account, at, read_key, own) VALUES (?, 0, ?, 0)",
          `did:key:zSquatter${i}`,
          "did:key:z6MkMadeUp",
        );
      }
    });
    const squatter = await connected();
    const madeUp = new Uint8Array(32).fill(9);
    expect(await squatter.host.pass({ ...s, key: madeUp }, readKeyDid(readSeedOf(madeUp)))).toMatchObject({ accepted: true });
    // the slots are full: a second member proving the constitution's read key still gets one
    const second = await connected();
    expect(await second.host.pass(s)).toMatchObject({ accepted: true });
    expect(await second.host.status()).toMatchObject({ spaces: 1 });
    expect(await squatter.host.status()).toMatchObject({ spaces: 0 }); // the most recently added squatter gave way
    await expect(squatter.host.fetchLog({ ...s, key: madeUp })).rejects.toMatchObject({ status: 403 });
    expect((await second.host.fetchLog(s)).items).toEqual([]);
  });
});

describe("every stored byte is charged to exactly one carrying account", () => {
  it("when an account stops carrying a space that others still carry, its bytes move to one of them", async () => {
    const a = await connected();
    const b = await connected();
    const s = makeSpace(a.acct, "public", [a.acct.root.did, b.acct.root.did]);
    await a.host.pass(s);
    await b.host.pass(s);
    const bBefore = (await b.host.status()).bytes as number;
    const aBefore = (await a.host.status()).bytes as number;
    const vs = await Promise.all(
      [1, 2, 3].map((i) => writeVersion(a.acct, s, { collection: "c", key: `k${i}`, body: { pad: "x".repeat(500) } })),
    );
    expect(await a.host.post(s.id, vs)).toMatchObject([{ accepted: true }, { accepted: true }, { accepted: true }]);
    const written = ((await a.host.status()).bytes as number) - aBefore;
    expect(written).toBeGreaterThan(1_500);
    expect(await a.host.unpass(s)).toMatchObject({ accepted: true });
    expect((await b.host.status()).bytes).toBe(bBefore + written);
    expect((await b.host.fetchLog(s)).items).toHaveLength(3);
  });
});

describe("last writer wins per record key by (at, version id), deletions included", () => {
  it("an older version that arrives after a newer deletion never brings the record back", async () => {
    const { acct, host } = await connected();
    const until = Math.floor(Date.now() / 1000) + 600;
    const text = `lww ${Math.random()}`;
    const older = await writeVersion(acct, host.carry!, {
      collection: LINK,
      key: "link:x",
      at: 1_000,
      body: { v: 1, blob: Buffer.from(text).toString("base64url"), until },
    });
    const deletion = await writeVersion(acct, host.carry!, { collection: LINK, key: "link:x", at: 2_000, deleted: true });
    expect(await host.post(host.carry!.id, [deletion])).toMatchObject([{ accepted: true }]);
    expect(await host.post(host.carry!.id, [older])).toMatchObject([{ accepted: true }]);
    expect(await host.status()).toMatchObject({ links: 0 });
    expect((await mailboxPage(linkTopic(utf8Encode(text)))).items).toEqual([]);
  });
});

describe("the Minca protocol §4.2: links served whole, their loading bounded", () => {
  it("one account answers a mailbox fetch with at most link_bytes_served_per_account bytes of link blobs, the most recently written first", async () => {
    const { acct, host } = await connected();
    expect(await host.link("link:0", utf8Encode("seed"), Math.floor(Date.now() / 1000) + 600)).toMatchObject({ accepted: true });
    const stub = accountStub(acct.root.did);
    await runInDurableObject(stub, (_i, state) => {
      for (let i = 1; i <= 10; i++) {
        state.storage.sql.exec(
          "INSERT INTO links (key, topic, blob, until, at, written, author) VALUES (?, 'T', ?, ?, 0, ?, NULL)",
          `link:big${i}`,
          new Uint8Array(65_536).fill(i).buffer,
          Math.floor(Date.now() / 1000) + 600,
          100 + i,
        );
      }
    });
    const served = await stub.linksFor("T");
    expect(served.reduce((n, l) => n + l.blob!.length, 0)).toBeLessThanOrEqual(MINCA_HOST_LIMITS.link_bytes_served_per_account);
    expect(served.map((l) => l.blob![0])).toEqual([7, 8, 9, 10]);
  });

  it("link loading bounded by the page: an account with many links of one topic loads its blob once, with the latest until", async () => {
    const { acct, host } = await connected();
    const blob = randomBytes(30_000);
    const now = Math.floor(Date.now() / 1000);
    for (let i = 0; i < 6; i++) expect(await host.link(`link:${i}`, blob, now + 600 + i)).toMatchObject({ accepted: true });
    const served = await accountStub(acct.root.did).linksFor(linkTopic(blob));
    expect(served).toHaveLength(1);
    expect(served[0]).toMatchObject({ blob, until: now + 605 });
  });

  it("link loading bounded by the page: a mailbox GET asks one linked account for the blob and the others for their until only; the page serves it once with the latest until", async () => {
    const blob = randomBytes(30_000);
    const topic = linkTopic(blob);
    const now = Math.floor(Date.now() / 1000);
    const accounts = [];
    for (let i = 0; i < 4; i++) {
      const c = await connected();
      expect(await c.host.link("link:shared", blob, now + 600 + i)).toMatchObject({ accepted: true });
      accounts.push(c);
    }
    // an account asked after the blob is known loads no blob
    expect(await accountStub(accounts[0].acct.root.did).linksFor(topic, false)).toEqual([
      { blob: null, until: now + 600, at: expect.any(Number) },
    ]);
    const page = (await (await SELF.fetch(`${RELAY}/minca/v1/mailbox/${topic}`)).json()) as {
      items: Array<{ seq: number; until: number; blob: string }>;
    };
    expect(page.items).toHaveLength(1);
    expect(page.items[0]).toMatchObject({ seq: 0, until: now + 603, blob: base64urlEncode(blob) });
  });
});
