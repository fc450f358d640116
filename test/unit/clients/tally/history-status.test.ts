// The ledger by peer and time in pages (clients/tally/history.ts); one snapshot of every relay's
// state, relays added and removed at run time; close() that waits for the writes under way.
import { afterEach, describe, expect, it } from "vitest";
import { KeyValueTallyStore, MapKeyValue, TallyClient, type KeyValue } from "../../../../clients/tally/index";
import { innerToLedgerEntry } from "../../../../shared/tally/entry";
import { signInner } from "../../../../shared/tally/proof";
import { newUser } from "../../../helpers/tally";
import { fakeRelay, type FakeRelay } from "../../../helpers/tally-fake-relay";
import { waitFor } from "../../../helpers/wait";

const relays: FakeRelay[] = [];
const clients: TallyClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const r of relays.splice(0)) await r.close();
});

/** A KeyValue that counts the values read. */
class CountingKeyValue extends MapKeyValue {
  reads = 0;
  override async get(key: string) {
    this.reads++;
    return super.get(key);
  }
}

describe("history", () => {
  it("history paged by peer and time: newest first, a page at a time, reading only the page's entries", async () => {
    const kv = new CountingKeyValue();
    const me = newUser();
    const bob = newUser();
    const carol = newUser();
    const store = new KeyValueTallyStore(kv);
    const c = new TallyClient({ relayUrl: "ws://unused", secretKey: me.secretKey, store });
    clients.push(c);
    for (let i = 0; i < 30; i++) {
      const to = i % 3 === 0 ? carol.npub : bob.npub;
      const at = new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
      const inner = { id: `m${i}`, type: "note", from_user_id: c.npub, to_user_id: to, created_at: at, payload: { i } };
      await store.appendLedger(innerToLedgerEntry(signInner(inner, me.secretKey), new Date()));
    }
    const first = await c.history({ peer: bob.npub, limit: 5 });
    expect(first.entries.map((e) => (e.payload as { i: number }).i)).toEqual([29, 28, 26, 25, 23]);
    const second = await c.history({ peer: bob.npub, limit: 5, cursor: first.next });
    expect(second.entries.map((e) => (e.payload as { i: number }).i)).toEqual([22, 20, 19, 17, 16]);
    const all = await c.history({ order: "asc", limit: 100 });
    expect(all.entries).toHaveLength(30);
    expect(all.next).toBeUndefined();
    kv.reads = 0;
    await c.history({ peer: carol.npub, limit: 3 });
    expect(kv.reads).toBeLessThanOrEqual(2 * 3 + 1); // the page's entries, not the ledger
  });
});

describe("status, relays at run time, close", () => {
  it("status snapshot of every relay; relays added and removed at run time", async () => {
    const one = await fakeRelay(undefined, "1".repeat(16));
    const two = await fakeRelay(undefined, "2".repeat(16));
    relays.push(one, two);
    const c = new TallyClient({ relayUrl: one.url, secretKey: newUser().secretKey, store: "memory" });
    clients.push(c);
    expect(c.status().relays).toEqual([{ url: one.url, state: "closed", deviceId: undefined, drained: false }]);
    await c.connect();
    await waitFor(() => c.status().drained, { what: "drained" });
    expect(c.addRelay(two.url)).toBe(true);
    expect(c.addRelay(two.url)).toBe(false);
    await waitFor(() => c.status().relays.every((r) => r.state === "registered"), { what: "both registered" });
    expect(c.status().relays.map((r) => [r.url, r.deviceId])).toEqual([
      [one.url, "1".repeat(16)],
      [two.url, "2".repeat(16)],
    ]);
    expect(c.removeRelay(one.url)).toBe(true);
    expect(c.status().relays.map((r) => r.url)).toEqual([two.url]);
    expect(c.connected).toBe(true);
  });

  it("close() waits for pending writes: a send under way is stored before close resolves", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const inner = new MapKeyValue();
    const slow: KeyValue = {
      get: (k) => inner.get(k),
      keys: (p) => inner.keys(p),
      delete: (k) => inner.delete(k),
      set: async (k, v) => {
        await gate;
        await inner.set(k, v);
      },
    };
    const c = new TallyClient({ relayUrl: "ws://unused", secretKey: newUser().secretKey, store: new KeyValueTallyStore(slow) });
    const sending = c.send(newUser().npub, "note", {});
    let closed = false;
    const closing = c.close().then(() => (closed = true));
    await new Promise((r) => setTimeout(r, 0));
    expect(closed).toBe(false);
    release();
    await closing;
    const id = await sending;
    expect((await inner.keys("outbox/")).map((k) => k.slice(7))).toEqual([id]);
  });
});
