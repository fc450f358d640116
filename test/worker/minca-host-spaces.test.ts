// The Minca host inside workerd (docs/hosting.md): carried spaces, durability across eviction,
// the pass rule, the account's own spaces and the carriers per space.
import { SELF, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { HostConnection, makeSpace, newAccount, withNote, writeVersion } from "../../clients/minca/host";
import { passBody, passKey } from "../../shared/minca/carry";
import { MINCA_HOST_LIMITS } from "../../shared/limits";
import { RELAY, accountStub, connected, fetchSelf, rows, spaceStub } from "./minca-host-setup";

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
