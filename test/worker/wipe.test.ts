// The base's wipe() (durable-objects/base/stored-object.ts): the one way an object deletes all it
// keeps. Its lease goes back to the ledger first, then its storage goes, and last the object
// forgets its schema and lease; a crash between two steps leaves nothing charged and nothing lost.
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledger, resetTotals } from "../helpers/ledger-totals";

const MAILBOX = "http://relay.test/minca/v1/mailbox";
let n = 0;
const newTopic = () => `wipe-topic-${Date.now()}-${++n}`;
const mailbox = (topic: string) => env.MINCA_MAILBOX.get(env.MINCA_MAILBOX.idFromName(topic));
type Wiping = { wipe(): Promise<void>; leaseHeld(): number };

/** What the ledger charges the holder (0: no lease row). */
const charged = (holder: string) =>
  runInDurableObject(
    ledger(),
    (_i, st) =>
      st.storage.sql.exec<{ bytes: number }>("SELECT bytes FROM leases WHERE kind = 'mailbox' AND holder = ?", holder).toArray()[0]
        ?.bytes ?? 0,
  );
const items = (topic: string) =>
  runInDurableObject(mailbox(topic), (_i, st) =>
    st.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'items'").toArray().length === 0
      ? 0
      : st.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM items").one().n,
  );

describe("wipe", () => {
  it("wipe releases the lease before deleting, and forgets last: a crash between the steps leaves nothing charged and nothing lost", async () => {
    await resetTotals();
    const topic = newTopic();
    const holder = mailbox(topic).id.toString();
    expect((await SELF.fetch(`${MAILBOX}/${topic}`, { method: "POST", body: "kept" })).status).toBe(201);
    expect(await charged(holder)).toBeGreaterThan(0);

    // A crash at the delete: the ledger was told first, and every row is still there.
    const seenAtDelete = await runInDurableObject(mailbox(topic), async (inst: unknown, st) => {
      const storage = st.storage as { deleteAll: () => Promise<void> };
      const deleteAll = storage.deleteAll.bind(st.storage);
      let leasedThen = -1;
      storage.deleteAll = () => {
        leasedThen = (inst as Wiping).leaseHeld();
        throw new Error("crash");
      };
      await expect((inst as Wiping).wipe()).rejects.toThrow("crash");
      storage.deleteAll = deleteAll;
      return leasedThen;
    });
    expect(seenAtDelete).toBe(0);
    expect(await charged(holder)).toBe(0); // nothing charged
    expect(await items(topic)).toBe(1); // nothing lost
    // The object still works (its schema was not forgotten before the delete): it reads and stores.
    const page = await SELF.fetch(`${MAILBOX}/${topic}`);
    expect(page.status).toBe(200);
    expect((await SELF.fetch(`${MAILBOX}/${topic}`, { method: "POST", body: "more" })).status).toBe(201);
    expect(await items(topic)).toBe(2);
    expect(await charged(holder)).toBeGreaterThan(0); // leased again with that write

    // The wipe done again completes: nothing kept, nothing charged, nothing leased in memory.
    await runInDurableObject(mailbox(topic), (inst: unknown) => (inst as Wiping).wipe());
    expect(await items(topic)).toBe(0);
    expect(await charged(holder)).toBe(0);
    expect(await runInDurableObject(mailbox(topic), (inst: unknown) => (inst as Wiping).leaseHeld())).toBe(0);
    // And stores again from nothing.
    expect((await SELF.fetch(`${MAILBOX}/${topic}`, { method: "POST", body: "anew" })).status).toBe(201);
    expect(await items(topic)).toBe(1);
  });
});
