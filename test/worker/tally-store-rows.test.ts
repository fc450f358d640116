// What storing a Tally envelope writes (durable-objects/tally/tally-queue.ts, migration
// 0003_queue_one_row): rows written are what a Durable Object's storage is billed by, and each
// index entry is one more. A stored envelope is one row and its flush deletes that row; the queue's
// sums are kept in memory between stores and never outlive a change they did not see.
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { TallyUser } from "../../durable-objects/tally/tally-user";
import { applyMigrations } from "../../durable-objects/base/schema";
import { MIGRATIONS } from "../../migrations/index";
import { heldWithDatabase } from "../../durable-objects/relay/storage-lease";
import type { Usage } from "../../server/stats";
import { newUser, opaqueEnvelope, type User } from "../helpers/tally";
import { deliver, exchangeEnvelopes, queuedCount, registerDevice, stubOf } from "../helpers/tally-user";

/** The rows the object's queries wrote and read since it was last asked. */
const taken = (stub: DurableObjectStub) =>
  runInDurableObject(stub, (o) => (o as unknown as { objectUsage: { take(): Usage } }).objectUsage.take());

const envelope = (from: User, to: User, id: string) => JSON.stringify(opaqueEnvelope(from, to, id));

interface QueueInside {
  queue: {
    count(): number;
    held(): number;
    lease: { ahead(h: number): void; extend(need: number): Promise<boolean> };
  };
}

describe("rows written per stored Tally envelope", () => {
  it("rows written per stored envelope: a store from a sender the queue already knows writes one row, and its flush one more", async () => {
    const alice = newUser();
    const bob = newUser();
    const b = stubOf(bob);
    // The first envelope makes bob's schema, alice's contact row and bob's lease: first contact.
    expect(await deliver(b, envelope(alice, bob, "first"), alice.hex, "first")).toBe("stored");
    await taken(b);
    const n = 40;
    for (let i = 0; i < n; i++) expect(await deliver(b, envelope(alice, bob, `e${i}`), alice.hex, `e${i}`)).toBe("stored");
    const stored = await taken(b);
    // One row each (no unique index, expiry or sender index, no sqlite_sequence row); the lease's
    // top-up may write its meta row now and then.
    expect(stored.rows_written ?? 0).toBeLessThanOrEqual(n * 1 + 2);
    const d = await registerDevice(bob);
    const flushed = await taken(b);
    expect(flushed.rows_written ?? 0).toBeLessThanOrEqual((n + 1) * 1 + 2);
    expect(await queuedCount(b)).toBe(0);
    d.close();
  });

  it("rows written per delivered envelope between users who already exchanged envelopes: none, on either side", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await registerDevice(alice);
    const b = await registerDevice(bob);
    await exchangeEnvelopes(a, alice, b, bob);
    await taken(stubOf(alice));
    await taken(stubOf(bob));
    for (let i = 0; i < 20; i++) {
      a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, `d${i}`) });
      expect((await a.next("queued")).status).toBe("delivered");
    }
    expect((await taken(stubOf(alice))).rows_written ?? 0).toBe(0);
    expect((await taken(stubOf(bob))).rows_written ?? 0).toBe(0);
    a.close();
    b.close();
  });

  it("0003_queue_one_row: a queue stored under the earlier schema is kept through the migration, in its order, and flushed as before", async () => {
    const alice = newUser();
    const bob = newUser();
    const b = stubOf(bob);
    await runInDurableObject(b, (inst: TallyUser, state) => {
      applyMigrations(state.storage, MIGRATIONS.TallyUser.slice(0, 2));
      const sql = state.storage.sql;
      const now = Date.now();
      for (let i = 0; i < 5; i++) {
        const body = envelope(alice, bob, `old${i}`);
        sql.exec(
          "INSERT INTO queue (from_hex, id, body, bytes, queued_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
          alice.hex,
          `old${i}`,
          body,
          body.length,
          now,
          now + 86_400_000,
        );
      }
      // This instance looks at its schema again, as a new instance of the new code would.
      (inst as unknown as { schema: { present: boolean | undefined } }).schema.present = undefined;
    });
    expect(await queuedCount(b)).toBe(5);
    expect(await deliver(b, envelope(alice, bob, "new"), alice.hex, "new")).toBe("stored");
    expect(await deliver(b, envelope(alice, bob, "old2"), alice.hex, "old2")).toBe("stored"); // idempotent: kept once
    expect(await queuedCount(b)).toBe(6);
    const d = await registerDevice(bob);
    void d;
    const names = await runInDurableObject(b, (_i, state) =>
      state.storage.sql
        .exec<{ name: string }>("SELECT name FROM _migrations ORDER BY name")
        .toArray()
        .map((r) => r.name),
    );
    expect(names).toEqual(["0001_init", "0002_contacts", "0003_queue_one_row", "0004_keyed_tables"]);
    expect(await queuedCount(b)).toBe(0);
  });

  it("0003_queue_one_row: a crash in the middle of the migration (after the earlier table is dropped) leaves the earlier queue as it was, and the migration runs again", async () => {
    const alice = newUser();
    const bob = newUser();
    await runInDurableObject(stubOf(bob), (_inst: TallyUser, state) => {
      const sql = state.storage.sql;
      applyMigrations(state.storage, MIGRATIONS.TallyUser.slice(0, 2));
      const now = Date.now();
      for (let i = 0; i < 3; i++) {
        const body = envelope(alice, bob, `c${i}`);
        sql.exec(
          "INSERT INTO queue (from_hex, id, body, bytes, queued_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
          alice.hex,
          `c${i}`,
          body,
          body.length,
          now,
          now + 86_400_000,
        );
      }
      const [m1, m2, m3] = MIGRATIONS.TallyUser;
      // The process dies after the DROP TABLE: here, a statement that fails as it runs (integer
      // overflow, a runtime error: the statements before it have run) right after it.
      const crashing = { name: m3.name, sql: m3.sql.replace("DROP TABLE queue;", "DROP TABLE queue;\nSELECT abs(-9223372036854775808);") };
      expect(crashing.sql).not.toBe(m3.sql);
      expect(() => applyMigrations(state.storage, [m1, m2, crashing])).toThrow();
      const applied = sql
        .exec<{ name: string }>("SELECT name FROM _migrations")
        .toArray()
        .map((r) => r.name);
      expect(applied).not.toContain(m3.name);
      expect(sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM queue WHERE queued_at > 0").one().n).toBe(3); // the earlier table, whole
      applyMigrations(state.storage, MIGRATIONS.TallyUser);
      expect(
        sql
          .exec<{ id: string }>("SELECT id FROM queue ORDER BY seq")
          .toArray()
          .map((r) => r.id),
      ).toEqual(["c0", "c1", "c2"]);
    });
  });

  it("the queue's kept sums: a store the lease rolls back leaves the count and the next charge as the table says", async () => {
    const alice = newUser();
    const bob = newUser();
    const b = stubOf(bob);
    for (let i = 0; i < 3; i++) expect(await deliver(b, envelope(alice, bob, `k${i}`), alice.hex, `k${i}`)).toBe("stored");
    const seen: Array<[number, number]> = [];
    await runInDurableObject(b, (inst: TallyUser) => {
      const q = (inst as unknown as QueueInside).queue;
      // The lease covers what the queue holds now and the ledger has nothing more: the next store is rolled back.
      const lease = q.lease as unknown as { granted: number };
      lease.granted = heldWithDatabase("tally", q.held());
      const extend = q.lease.extend.bind(q.lease);
      q.lease.extend = async () => false;
      const ahead = q.lease.ahead.bind(q.lease);
      q.lease.ahead = (h: number) => {
        seen.push([h, q.held()]);
        ahead(h);
      };
      (q as unknown as { restore: () => void }).restore = () => {
        q.lease.extend = extend;
      };
    });
    expect(await deliver(b, envelope(alice, bob, "refused"), alice.hex, "refused")).toBe("storage_full");
    await runInDurableObject(b, (inst: TallyUser) => {
      const q = (inst as unknown as QueueInside).queue;
      expect(q.count()).toBe(3);
      (q as unknown as { restore: () => void }).restore();
    });
    expect(await queuedCount(b)).toBe(3);
    expect(await deliver(b, envelope(alice, bob, "next"), alice.hex, "next")).toBe("stored");
    expect(seen.length).toBeGreaterThanOrEqual(1);
    for (const [charged, held] of seen) expect(charged).toBe(heldWithDatabase("tally", held));
    await runInDurableObject(b, (inst: TallyUser) => expect((inst as unknown as QueueInside).queue.count()).toBe(4));
  });
});
