// A peer over a store that reads its values asynchronously (an adapter with `load` only, as
// IndexedDB): what it ships is read first, and nothing it sends afterwards overtakes those records.
import { describe, expect, it } from "vitest";
import { MemoryBus } from "../../../../clients/passnote/memory-bus";
import { PassnotePeer } from "../../../../clients/passnote/peer";
import { MemoryAdapter } from "../../../../clients/passnote/stores/memory";
import type { StorageAdapter } from "../../../../clients/passnote/stores/adapter";
import { openStore } from "../../../../clients/passnote/stores/adapter-store";
import { onReconcile } from "../../../../clients/passnote/protocol/anti-entropy";
import { FULL_RANGE } from "../../../../clients/passnote/protocol/records";
import { groupKey, tapped } from "../../../helpers/passnote";
import { settle } from "../../../helpers/passnote-settle";

/** A database read asynchronously and slowly: every load resolves a few milliseconds later. */
function slowAdapter(inner = new MemoryAdapter(), counted = { loads: 0 }): StorageAdapter {
  return {
    loadAll: () => inner.loadAll(),
    load: async (c, k) => {
      counted.loads++;
      await new Promise((r) => setTimeout(r, 5));
      return inner.loadSync(c, k);
    },
    save: async (row) => inner.save(row),
    loadMeta: async (n) => inner.loadMeta(n),
    saveMeta: async (n, v) => inner.saveMeta(n, v),
    close: () => inner.close(),
  };
}

describe("a peer over a store that reads asynchronously", () => {
  it("the records a reconcile answer ships leave before the answer itself, though they are read asynchronously (a reply never overtakes its records)", async () => {
    const key = groupKey();
    const bus = new MemoryBus();
    const inner = new MemoryAdapter();
    const writer = new PassnotePeer({
      transport: await bus.connect(),
      store: await openStore(slowAdapter(inner)),
      key,
      antiEntropyIntervalMs: 0,
    });
    for (let i = 0; i < 10; i++) writer.put("notes", `a${i}`, i);
    await writer.close();
    const ta = await bus.connect();
    const sentA = tapped(ta, key);
    const reads = { loads: 0 };
    const a = new PassnotePeer({ transport: ta, store: await openStore(slowAdapter(inner, reads)), antiEntropyIntervalMs: 0 });
    const tb = await bus.connect();
    const b = new PassnotePeer({ transport: tb, key, antiEntropyIntervalMs: 0 });
    await settle([a, b]);
    expect(b.store.size("notes")).toBe(10);
    // b probes a's notes as a peer holding three other records would: a answers with a leaf, its
    // ten records (read from the slow database) and a request for b's.
    const from = sentA.length;
    const loadsBefore = reads.loads;
    onReconcile(
      a.engine.core,
      tb.self!,
      {
        type: "reconcile",
        collection: "notes",
        probes: [{ ...FULL_RANGE, depth: 0, count: 3, fingerprint: new Uint8Array(16) }],
        requests: [],
      },
      "passphrase",
    );
    await settle([a, b]);
    const answer = sentA
      .slice(from)
      .map((m) =>
        m.type === "reconcile" ? `reconcile, ${m.requests.length} request` : m.type === "delta" ? `delta of ${m.records.length}` : m.type,
      );
    expect(answer).toEqual(["delta of 10", "reconcile, 1 request"]);
    expect(reads.loads).toBeGreaterThan(loadsBefore); // the shipped records were read from the slow database
    await a.close();
    await b.close();
  });
});

describe("a read the store cannot answer", () => {
  it("a shipment whose read fails stops the peer with a StoreFailedError (nothing is sent as if it had been read)", async () => {
    const key = groupKey();
    const bus = new MemoryBus();
    const inner = new MemoryAdapter();
    const writer = new PassnotePeer({
      transport: await bus.connect(),
      store: await openStore(slowAdapter(inner)),
      key,
      antiEntropyIntervalMs: 0,
    });
    writer.put("notes", "n1", 1);
    await writer.close();
    const broken: StorageAdapter = { ...slowAdapter(inner), load: async () => Promise.reject(new Error("the disk went away")) };
    const a = new PassnotePeer({ transport: await bus.connect(), store: await openStore(broken), antiEntropyIntervalMs: 0 });
    const errors: Error[] = [];
    a.on("error", (e) => errors.push(e));
    const b = new PassnotePeer({ transport: await bus.connect(), key, antiEntropyIntervalMs: 0 });
    await settle([a, b]);
    expect(errors.map((e) => e.name)).toContain("StoreFailedError");
    expect(errors.map((e) => e.message).join()).toMatch(/the disk went away/);
    expect(b.store.size("notes")).toBe(0);
    await a.close();
    await b.close();
  });
});
