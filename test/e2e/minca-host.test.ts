// Minca hosting against a running relay (docs/hosting.md, the Minca protocol §4.1-4.3): a device
// connects the host and passes two spaces, members write and later fetch, forgeries leave
// nothing, links are served on a mailbox's first page, a killed relay loses nothing, and
// carry:closed leaves no row for the account in the objects' SQLite files. This file runs its
// own relay (it kills it and reads its storage).
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HostConnection, makeSpace, newAccount, withNote, writeVersion, type MincaAccount } from "../../clients/minca/host";
import { base64urlEncode, utf8Encode } from "../../shared/encoding";
import { linkTopic, passBody, passKey } from "../../shared/minca/carry";
import { newSpace, readSeedOf, type Space } from "../../shared/minca/space";
import { readProofHeaders } from "../../shared/minca/read-proof";
import { versionId } from "../../shared/minca/version";
import { startRelay, type RelayProcess } from "../helpers/relay-process";

let relay: RelayProcess;
beforeAll(async () => {
  relay = await startRelay();
});
afterAll(async () => {
  await relay?.stop();
  if (relay) rmSync(relay.dataDir, { recursive: true, force: true });
});

// One story, told in order: the later tests use what the earlier ones stored.
let alice: MincaAccount;
let bob: MincaAccount;
let host: HostConnection;
let priv: Space;
let pub: Space;
let written: { priv: unknown[]; pub: unknown[] };
const blob = utf8Encode(`a short link ${Math.random()}`);
const topic = linkTopic(blob);

const json = (v: unknown) => JSON.parse(JSON.stringify(v));

describe("a device connects the host and passes two spaces; members write and later fetch", () => {
  it("connect, pass a private and a public space, write as two members, fetch exactly those versions later", async () => {
    alice = await newAccount();
    bob = await newAccount();
    host = new HostConnection(alice, relay.url);
    expect((await host.info()).did).toMatch(/^did:key:zDn/);
    expect(await host.connect(0, "Alice")).toMatchObject({ account: alice.root.did });
    priv = newSpace({ founders: [alice.root.did, bob.root.did], visibility: "private" });
    pub = newSpace({ founders: [alice.root.did, bob.root.did], visibility: "public" });
    expect(await host.pass(priv)).toMatchObject({ accepted: true });
    expect(await host.pass(pub)).toMatchObject({ accepted: true });

    const a1 = await writeVersion(alice, priv, { collection: "std.message", key: "m1", body: { text: "secret hello" }, topics: ["t1"] });
    const b1 = await writeVersion(bob, priv, { collection: "std.message", key: "m2", body: { text: "secret reply" } });
    const p1 = await writeVersion(bob, pub, { collection: "std.post", key: "p1", body: { text: "public" } });
    const bobsHost = new HostConnection(bob, relay.url);
    expect(await host.post(priv.id, [a1])).toEqual([{ id: a1.id, accepted: true, seq: 1 }]);
    expect(await bobsHost.post(priv.id, [b1])).toEqual([{ id: b1.id, accepted: true, seq: 2 }]);
    expect(await bobsHost.post(pub.id, [p1])).toEqual([{ id: p1.id, accepted: true, seq: 1 }]);
    written = { priv: [json(a1), json(b1)], pub: [json(p1)] };

    // later, another member's device (it holds the key from an invite) fetches them
    const later = new HostConnection(bob, relay.url);
    const log = await later.fetchLog(priv);
    expect(log.items.map((i) => i.seq)).toEqual([1, 2]);
    expect(log.items.map((i) => i.version)).toEqual(written.priv);
    expect((await later.fetchLog(pub)).items.map((i) => i.version)).toEqual(written.pub);
    // the private space's log only with its read key
    expect((await fetch(`${relay.url}/minca/v1/spaces/${priv.id}/versions`)).status).toBe(401);
    expect((await fetch(`${relay.url}/minca/v1/spaces/${pub.id}/versions`)).status).toBe(200);
  });

  it("forged versions are refused with their reason and leave nothing", async () => {
    const good = await writeVersion(alice, pub, { collection: "std.post", key: "f", body: { n: 1 } });
    const badSig = { ...good, sig: base64urlEncode(new Uint8Array(64)) };
    const wrongId = { ...good, body: { n: 2 } };
    const stranger = await newAccount();
    const notRooted = await writeVersion(stranger, pub, { collection: "std.post", key: "f", body: {} });
    const recordsOnly = await writeVersion(await withNote(alice, "/record"), host.carry!, {
      collection: "sys.pass",
      key: passKey(pub.id),
      body: passBody(pub),
    });
    const results = await host.post(pub.id, [badSig, wrongId, notRooted]);
    expect(results.map((r) => (r.accepted ? "accepted" : r.reason))).toEqual(["bad_signature", "id_mismatch", "not_founder"]);
    expect(await host.post(host.carry!.id, [recordsOnly])).toMatchObject([{ accepted: false, reason: "not_account_write" }]);
    expect((await host.fetchLog(pub)).items.map((i) => i.version)).toEqual(written.pub);
    expect(versionId(wrongId as unknown as Record<string, unknown>)).not.toBe(wrongId.id);
  });

  it("a pass whose constitution does not hash to its space, or whose read seed does not match, is refused", async () => {
    const other = makeSpace(alice, "private");
    const mismatch = await writeVersion(alice, host.carry!, { collection: "sys.pass", key: passKey(pub.id), body: passBody(other) });
    const wrongSeed = await writeVersion(alice, host.carry!, {
      collection: "sys.pass",
      key: passKey(priv.id),
      body: passBody({ constitution: priv.constitution, key: other.key }),
    });
    const results = await host.post(host.carry!.id, [mismatch, wrongSeed]);
    expect(results.map((r) => (r.accepted ? "accepted" : r.reason))).toEqual(["pass_space_mismatch", "pass_read_key_mismatch"]);
    // the private space is still read with its own key
    expect((await host.fetchLog(priv)).items).toHaveLength(2);
    expect(await host.status()).toMatchObject({ spaces: 2 });
  });
});

describe("a stranger, a revoked key and a records-only program, each refused with its documented reason", () => {
  it("a stranger account's pass takeover (its own read key, the latest at the host takes) locks no member out; its versions are not_founder", async () => {
    const club = newSpace({ founders: [alice.root.did, bob.root.did], visibility: "private" });
    expect(await host.pass(club)).toMatchObject({ accepted: true });
    const mallory = await newAccount();
    const malloryHost = new HostConnection(mallory, relay.url);
    await malloryHost.connect(0);
    const madeUp = new Uint8Array(32).fill(3);
    const { readKeyDid } = await import("../../shared/minca/space");
    const takeover = await writeVersion(mallory, malloryHost.carry!, {
      collection: "sys.pass",
      key: passKey(club.id),
      body: passBody({ constitution: club.constitution, key: madeUp }, readKeyDid(readSeedOf(madeUp))),
      at: Date.now() + 9 * 60_000, // at most 10 minutes ahead: a later one is from_future
    });
    expect(await malloryHost.post(malloryHost.carry!.id, [takeover])).toMatchObject([{ accepted: true }]);
    // the members read and write on
    const b = await writeVersion(bob, club, { collection: "std.message", key: "m", body: { text: "still ours" } });
    expect(await new HostConnection(bob, relay.url).post(club.id, [b])).toMatchObject([{ accepted: true, seq: 1 }]);
    expect((await host.fetchLog(club)).items.map((i) => i.version.id)).toEqual([b.id]);
    // and the stranger writes nothing into the space
    const forged = await writeVersion(mallory, { ...club, key: madeUp }, { collection: "std.message", key: "x", body: {} });
    expect(await malloryHost.post(club.id, [forged])).toMatchObject([{ accepted: false, reason: "not_founder" }]);
    expect(await malloryHost.close()).toMatchObject({ accepted: true }); // so the story's end finds nothing of alice's
  });

  it("a revoked key's writes are refused with revoked, in a carried space and in the carry space", async () => {
    const board = newSpace({ founders: [alice.root.did], visibility: "public" });
    expect(await host.pass(board)).toMatchObject({ accepted: true });
    const app = await withNote(alice, "/");
    const appHost = new HostConnection(app, relay.url);
    appHost.carry = host.carry;
    expect(await appHost.post(board.id, [await writeVersion(app, board, { collection: "std.post", key: "1", body: {} })])).toMatchObject([
      { accepted: true, seq: 1 },
    ]);
    expect(await host.revoke(app.session.did)).toMatchObject({ accepted: true });
    expect(await appHost.post(board.id, [await writeVersion(app, board, { collection: "std.post", key: "2", body: {} })])).toMatchObject([
      { accepted: false, reason: "revoked" },
    ]);
    expect(await appHost.pass(newSpace({ founders: [alice.root.did], visibility: "public" }))).toMatchObject({
      accepted: false,
      reason: "revoked",
    });
    expect(await appHost.close()).toMatchObject({ accepted: false, reason: "revoked" });
    expect((await host.fetchLog(board)).items).toHaveLength(1);
  });

  it("a records-only program writing the account registry is refused with not_account_write", async () => {
    const registry = newSpace({ founders: [alice.root.did], visibility: "private" });
    expect(await host.pass(registry, undefined, { own: true })).toMatchObject({ accepted: true });
    const program = await withNote(alice, "/record");
    const joined = await writeVersion(program, registry, { collection: "sys.joined", key: `space:${priv.id}`, body: { v: 1 } });
    expect(await new HostConnection(program, relay.url).post(registry.id, [joined])).toMatchObject([
      { accepted: false, reason: "not_account_write" },
    ]);
    const device = await writeVersion(alice, registry, { collection: "sys.joined", key: `space:${priv.id}`, body: { v: 1 } });
    expect(await host.post(registry.id, [device])).toMatchObject([{ accepted: true, seq: 1 }]);
  });
});

describe("the Minca protocol §4.2: links", () => {
  it("a mailbox fetch's first page carries the account's live links of the topic with seq 0, the blob once, until its last link expires; expired ones never", async () => {
    const now = Math.floor(Date.now() / 1000);
    expect((await fetch(`${relay.url}/minca/v1/mailbox/${topic}`, { method: "POST", body: "own item" })).status).toBe(201);
    const links = [];
    for (let i = 1; i <= 65; i++) {
      links.push(
        await writeVersion(alice, host.carry!, {
          collection: "sys.link",
          key: `link:${i}`,
          body: { v: 1, blob: base64urlEncode(blob), until: now + 1000 + i },
        }),
      );
    }
    const short = Math.floor(Date.now() / 1000) + 3;
    links.push(
      await writeVersion(alice, host.carry!, {
        collection: "sys.link",
        key: "link:short",
        body: { v: 1, blob: base64urlEncode(blob), until: short },
      }),
    );
    expect((await host.post(host.carry!.id, links)).every((r) => r.accepted)).toBe(true);
    let page = (await (await fetch(`${relay.url}/minca/v1/mailbox/${topic}`)).json()) as any;
    // a topic is its blob's: every link of it is one blob, served once, first
    expect(page.items[0]).toMatchObject({ seq: 0, until: now + 1065, blob: base64urlEncode(blob) });
    expect(page.items.filter((i: any) => i.seq === 0)).toHaveLength(1);
    await new Promise((r) => setTimeout(r, Math.max(0, short * 1000 - Date.now()) + 200));
    page = (await (await fetch(`${relay.url}/minca/v1/mailbox/${topic}`)).json()) as any;
    const served = page.items.filter((i: any) => i.seq === 0);
    expect(served).toMatchObject([{ until: now + 1065, blob: base64urlEncode(blob) }]);
    // alongside the mailbox's own items; and on the first page only
    expect(page.items.filter((i: any) => i.seq !== 0).map((i: any) => i.seq)).toEqual([1]);
    expect(page.next).toBe(1);
    const second = (await (await fetch(`${relay.url}/minca/v1/mailbox/${topic}?after=1`)).json()) as any;
    expect(second.items).toEqual([]);
  });
});

describe("a restart loses nothing", () => {
  it("after the relay is killed and restarted: the logs, the passes, the links and the status are as they were", async () => {
    const status = await host.status();
    const { dataDir, port } = relay;
    await relay.stop({ kill: true });
    relay = await startRelay({ dataDir, port });
    expect(await host.status()).toEqual(status);
    expect((await host.fetchLog(priv)).items.map((i) => i.version)).toEqual(written.priv);
    expect((await host.fetchLog(pub)).items.map((i) => i.version)).toEqual(written.pub);
    const page = (await (await fetch(`${relay.url}/minca/v1/mailbox/${topic}`)).json()) as any;
    expect(page.items.filter((i: any) => i.seq === 0)).toHaveLength(1);
    const more = await writeVersion(alice, pub, { collection: "std.post", key: "after-restart", body: {} });
    expect(await host.post(pub.id, [more])).toMatchObject([{ accepted: true, seq: 2 }]);
  });
});

describe("the Minca protocol §4.2: carry:closed", () => {
  it("the host forgets everything it held for the account: no stored row in the objects' storage, and the status answers 410", async () => {
    const ids = [priv.id, pub.id, host.carry!.id];
    expect(await host.close()).toMatchObject({ accepted: true });
    const res = await fetch(`${relay.url}/minca/v1/host/accounts/${alice.root.did}`, {
      headers: readProofHeaders(readSeedOf(host.carry!.key!), host.carry!.id),
    });
    expect(res.status).toBe(410);
    expect(((await res.json()) as any).error.code).toBe("carry_closed");
    expect((await fetch(`${relay.url}/minca/v1/spaces/${pub.id}/versions`)).status).toBe(404);
    const page = (await (await fetch(`${relay.url}/minca/v1/mailbox/${topic}`)).json()) as any;
    expect(page.items.filter((i: any) => i.seq === 0)).toEqual([]);

    // stop the relay and read its SQLite files (wrangler dev's layout or workerd serve's: every
    // .sqlite under the data directory; the objects are told apart by their tables)
    await relay.stop();
    const { DatabaseSync } = await import("node:sqlite");
    const files = (readdirSync(relay.dataDir, { recursive: true }) as string[]).filter((n) => n.endsWith(".sqlite"));
    const hits: string[] = [];
    let accountFiles = 0;
    for (const f of files) {
      const db = new DatabaseSync(join(relay.dataDir, f), { readOnly: true });
      try {
        const tables = (
          db
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'")
            .all() as Array<{ name: string }>
        ).map((t) => t.name);
        if (!["passes", "carriers", "link_accounts"].some((t) => tables.includes(t))) continue;
        for (const t of tables) {
          for (const row of db.prepare(`SELECT * FROM "${t}"`).all() as Array<Record<string, unknown>>) {
            const text = Object.values(row)
              .map((v) => (v instanceof Uint8Array ? Buffer.from(v).toString("latin1") : String(v)))
              .join(" ");
            if (tables.includes("passes") && row.key === "closed_space" && row.value === host.carry!.id) accountFiles++;
            else if (text.includes(alice.root.did) || ids.some((id) => text.includes(id))) hits.push(`${f}/${t}: ${text.slice(0, 120)}`);
          }
        }
      } finally {
        db.close();
      }
    }
    // only the tombstone that answers 410 names the closed carry space; nothing else names the account or its spaces
    expect(accountFiles).toBe(1);
    expect(hits).toEqual([]);
  });
});
