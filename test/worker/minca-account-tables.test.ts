// A module per MincaAccount table (durable-objects/minca-host/account-{links,revokes,passes,wakes,
// receivers}.ts), each owning its SQL and what its rows are charged: for each table, after inserts,
// updates and deletes, what the account is charged (AccountUsage.used(), what its lease holds)
// equals a fresh sum of what is stored, row by row, with the table's own formula.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { LazySchema } from "../../durable-objects/base/schema";
import { AccountStore } from "../../durable-objects/minca-host/account-store";
import { Deferred } from "../../durable-objects/base/deferred";
import { AccountUsage } from "../../durable-objects/minca-host/account-usage";
import { linkRowBytes, topicRowBytes } from "../../durable-objects/minca-host/account-links";
import { revokeRowBytes } from "../../durable-objects/minca-host/account-revokes";
import { passRowBytes } from "../../durable-objects/minca-host/account-passes";
import { wakeRowBytes } from "../../durable-objects/minca-host/account-wakes";
import { receiverRowBytes } from "../../durable-objects/minca-host/account-receivers";
import { TOMBSTONE_KEYS } from "../../durable-objects/minca-host/account-meta";
import { MIGRATIONS } from "../../migrations/index";
import { STORAGE_LIMITS } from "../../shared/limits";
import { rowBytes } from "../../shared/storage";
import { resetTotals } from "../helpers/ledger-totals";

let n = 0;
type Tables = { store: AccountStore; usage: AccountUsage; fresh: () => number; did: string };

/** Runs `f` in a fresh account's object, with its store and usage, and a fresh sum of what it stores. */
function inAccount(f: (t: Tables) => Promise<void> | void): Promise<void> {
  const did = `did:key:zTables${Date.now()}${++n}`;
  const stub = env.MINCA_ACCOUNT.get(env.MINCA_ACCOUNT.idFromName(did));
  return runInDurableObject(stub, async (_inst, state) => {
    const schema = new LazySchema(state.storage, MIGRATIONS.MincaAccount);
    schema.ensure();
    const store = new AccountStore(state, schema, () => did);
    store.meta.set("carry_space", "space:carry");
    const usage = new AccountUsage(
      store,
      env,
      new Deferred(
        state,
        () => true,
        async () => {},
      ),
    );
    const sql = state.storage.sql;
    // Row by row, with each table's formula; nothing read through the modules' own sums.
    const fresh = () => {
      let b = 0;
      const topics = new Set<string>();
      for (const l of sql.exec<{ key: string; topic: string; blob: ArrayBuffer }>("SELECT key, topic, blob FROM links")) {
        b += linkRowBytes({ key: l.key, topic: l.topic, blobBytes: l.blob.byteLength });
        topics.add(l.topic);
      }
      b += topics.size * topicRowBytes(did);
      for (const r of sql.exec<{ did: string }>("SELECT did FROM revoked")) b += revokeRowBytes(r.did);
      for (const _ of sql.exec("SELECT space FROM passes")) b += passRowBytes();
      // A space's usage row, and the space's database while the account pays for versions in it.
      for (const u of sql.exec<{ bytes: number; versions: number }>("SELECT bytes, versions FROM usage"))
        b += u.bytes + (u.versions > 0 ? STORAGE_LIMITS.database_bytes_space : 0);
      for (const _ of sql.exec("SELECT key FROM wakes")) b += wakeRowBytes();
      for (const _ of sql.exec("SELECT key FROM receivers")) b += receiverRowBytes();
      for (const key of TOMBSTONE_KEYS) {
        const v = store.meta.get(key);
        if (v !== null) b += rowBytes(v.length);
      }
      return b + Number(store.meta.get("binding_bytes") ?? 0);
    };
    await f({ store, usage, fresh, did });
  });
}

const blob = (size: number, fill = 1) => new Uint8Array(size).fill(fill);
const until = () => Math.floor(Date.now() / 1000) + 3600;

describe("a module per MincaAccount table: what is charged equals a fresh sum of what is stored", () => {
  it("links: after inserts, updates (a bigger blob, another topic) and deletes (one, expired, evicted)", async () => {
    await resetTotals();
    await inAccount(async ({ store, usage, fresh, did }) => {
      const links = store.links;
      expect(usage.used()).toBe(0);
      const a = { key: "link:a", topic: "topic-1", blob: blob(100), until: until(), at: Date.now() };
      expect(await usage.storeRow(links.growth(a, did), () => links.put(a, "did:key:zAuthor"))).toBe(true);
      expect(usage.used()).toBe(fresh());
      expect(usage.used()).toBe(links.growth(a, did)); // the first link of a topic: its row and the topic's
      links.put({ key: "link:b", topic: "topic-1", blob: blob(50, 2), until: until(), at: Date.now() }, null);
      links.put({ key: "link:c", topic: "topic-2", blob: blob(70, 3), until: until() - 7200, at: Date.now() }, null);
      expect(usage.used()).toBe(fresh());
      links.put({ ...a, blob: blob(400, 4) }, null); // updated: a bigger blob
      expect(usage.used()).toBe(fresh());
      links.put({ ...a, topic: "topic-3" }, null); // updated: another topic
      expect(usage.used()).toBe(fresh());
      expect(links.delete("link:b")).toBe("topic-1");
      expect(usage.used()).toBe(fresh());
      expect([...links.expire(Math.floor(Date.now() / 1000))]).toEqual(["topic-2"]);
      expect(usage.used()).toBe(fresh());
      links.put({ key: "link:d", topic: "topic-4", blob: blob(10), until: until(), at: Date.now() }, null);
      expect([...links.evict(1)]).toEqual(["topic-3"]);
      expect(usage.used()).toBe(fresh());
      expect(links.topics()).toEqual(["topic-4"]);
    });
  });

  it("revokes: after inserts, a revoke repeated with another cutoff, and the tombstone's meta rows", async () => {
    await inAccount(({ store, usage, fresh }) => {
      store.revokes.revoke("did:key:zRevokedOne", null);
      store.revokes.revoke("did:key:zRevokedTwoLonger", 1_000);
      expect(usage.used()).toBe(fresh());
      expect(usage.used()).toBe(revokeRowBytes("did:key:zRevokedOne") + revokeRowBytes("did:key:zRevokedTwoLonger"));
      expect(store.revokes.revoke("did:key:zRevokedTwoLonger", 500)).toBe(500);
      expect(usage.used()).toBe(fresh());
      store.meta.set("closed_at", "1700000000000");
      store.meta.set("closed_space", "space:closed");
      expect(usage.used()).toBe(fresh());
      expect(usage.tombstoneHeld()).toBe(usage.used());
    });
  });

  it("passes: a pass row charges nothing of its own; its space's usage row does, and goes with it", async () => {
    await resetTotals();
    await inAccount(async ({ store, usage, fresh }) => {
      const pass = (space: string) => ({ space, key: `pass:${space}`, at: 1, visibility: "private", readKey: null, own: false });
      store.passes.put(pass("space:a"), null);
      store.passes.put(pass("space:b"), null);
      expect(usage.used()).toBe(fresh());
      expect(await usage.adopt("space:a", 2, 1_000)).toBe(true);
      expect(await usage.adopt("space:b", 1, 300)).toBe(true);
      expect(usage.used()).toBe(fresh());
      store.passes.put({ ...pass("space:a"), at: 2, own: true }, null); // updated
      expect(usage.used()).toBe(fresh());
      usage.refund("space:a", 1, 400);
      expect(usage.used()).toBe(fresh());
      store.passes.delete("space:b");
      expect(usage.used()).toBe(fresh());
      expect(usage.lostSlot("space:a")).toEqual({ versions: 1, bytes: 600 });
      expect(usage.used()).toBe(fresh());
      expect(usage.used()).toBe(0);
    });
  });

  it("wakes: a wake row charges nothing of its own (its carry-space version pays), inserted, updated or deleted", async () => {
    await inAccount(({ store, usage, fresh }) => {
      store.wakes.put("wake:a", 1, JSON.stringify({ v: 1, x: "y".repeat(200) }), null);
      store.wakes.put("wake:b", 1, "{}", "did:key:zAuthor");
      expect(usage.used()).toBe(fresh());
      store.wakes.put("wake:a", 2, "{}", null);
      expect(usage.used()).toBe(fresh());
      store.wakes.delete("wake:b");
      expect(usage.used()).toBe(fresh());
      expect(store.wakes.count()).toBe(1);
      expect(usage.used()).toBe(0);
    });
  });

  it("receivers: a receiver row charges nothing of its own (its carry-space version pays), inserted, updated or deleted with its pushes", async () => {
    await inAccount(({ store, usage, fresh }) => {
      const r = (key: string, endpoint: string) => ({
        key,
        at: 1,
        device: "phone",
        endpoint,
        p256dh: "k".repeat(87),
        auth: "a".repeat(22),
      });
      expect(store.receivers.add(r("receiver:a", "https://push.example/a"), null, null).ok).toBe(true);
      expect(store.receivers.add(r("receiver:b", "https://push.example/b"), null, null).ok).toBe(true);
      expect(usage.used()).toBe(fresh());
      expect(store.receivers.add(r("receiver:a", "https://push.example/a"), null, null).ok).toBe(true);
      expect(store.receivers.held().map((h) => h.endpoint)).toEqual(["https://push.example/a", "https://push.example/b"]);
      expect(usage.used()).toBe(fresh());
      store.receivers.delete("receiver:b");
      expect(usage.used()).toBe(fresh());
      expect(store.receivers.count()).toBe(1);
      expect(usage.used()).toBe(0);
    });
  });
});
