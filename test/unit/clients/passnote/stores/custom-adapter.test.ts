// An app's own storage adapter, written the way an app developer would (a Map, every method
// asynchronous), runs the adapter contract; the SDK's layer over it keeps the keys first and
// acknowledges nothing the adapter did not; docs/sdk.md's adapter example runs as written.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MemoryBus } from "../../../../../clients/passnote/memory-bus";
import { PassnotePeer } from "../../../../../clients/passnote/peer";
import type { RecordRow, StorageAdapter } from "../../../../../clients/passnote/stores/adapter";
import { openStore } from "../../../../../clients/passnote/stores/adapter-store";
import { foundGroup } from "../../../../../clients/passnote/protocol/roster";
import { adapterContract } from "../../../../helpers/passnote-adapter-contract";

// ---- the app's adapter: about thirty lines ----
interface MapDatabase {
  records: Map<string, RecordRow>;
  meta: Map<string, Uint8Array>;
}

class MapAdapter implements StorageAdapter {
  constructor(private readonly db: MapDatabase) {}
  async loadAll(): Promise<RecordRow[]> {
    return [...this.db.records.values()];
  }
  async load(collection: string, key: string): Promise<RecordRow | undefined> {
    return this.db.records.get(`${collection}\0${key}`);
  }
  async save(row: RecordRow): Promise<void> {
    const id = `${row.collection}\0${row.key}`;
    const held = this.db.records.get(id);
    if (!held || row.hlc > held.hlc) this.db.records.set(id, row); // last-writer-wins by HLC
  }
  async loadMeta(name: string): Promise<Uint8Array | undefined> {
    return this.db.meta.get(name);
  }
  async saveMeta(name: string, value: Uint8Array): Promise<void> {
    this.db.meta.set(name, value);
  }
  async close(): Promise<void> {}
  async destroy(): Promise<void> {
    this.db.records.clear();
    this.db.meta.clear();
  }
}
// ---- end of the app's adapter ----

const databases = new Map<string, MapDatabase>();
const database = (name: string) => {
  if (!databases.has(name)) databases.set(name, { records: new Map(), meta: new Map() });
  return databases.get(name)!;
};

adapterContract("an app's own (a Map, every method asynchronous)", () => ({
  persistent: true,
  open: async (name) => new MapAdapter(database(name)),
  store: { keys: { wrappingKey: new Uint8Array(32).fill(5) } },
  rawContains: async (name, hex) => {
    const db = database(name);
    const all = [...db.meta.values(), ...[...db.records.values()].map((r) => r.value)];
    return all.some((b) => Buffer.from(b).toString("hex").includes(hex));
  },
}));

/** A Map adapter whose key write waits until the test lets it go (or fails it), and which logs every call. */
function gatedAdapter() {
  const db: MapDatabase = { records: new Map(), meta: new Map() };
  const log: string[] = [];
  let release!: () => void;
  let fail!: (e: Error) => void;
  const keysWritten = new Promise<void>((resolve, reject) => {
    release = resolve;
    fail = reject;
  });
  keysWritten.catch(() => undefined);
  const inner = new MapAdapter(db);
  const adapter: StorageAdapter = {
    loadAll: () => inner.loadAll(),
    loadMeta: (n) => inner.loadMeta(n),
    close: () => inner.close(),
    async save(row) {
      log.push(`save ${row.collection}/${row.key}`);
      await inner.save(row);
    },
    async saveMeta(name, value) {
      log.push(`saveMeta ${name} begins`);
      await keysWritten;
      await inner.saveMeta(name, value);
      log.push(`saveMeta ${name} durable`);
    },
  };
  return { db, log, adapter, release, fail };
}

describe("the SDK's layer over an asynchronous adapter", () => {
  it("keys first: records merged while the keys' write is not durable reach the adapter only after it, and are acknowledged only then", async () => {
    const { db, log, adapter, release } = gatedAdapter();
    const store = await openStore(adapter);
    const peer = new PassnotePeer({ transport: await new MemoryBus().connect(), store, identity: foundGroup(), antiEntropyIntervalMs: 0 });
    peer.put("notes", "n1", { i: 1 });
    let acknowledged = false;
    const flushed = peer.flushed().then(() => (acknowledged = true));
    for (let i = 0; i < 20; i++) await Promise.resolve(); // turns pass: the keys are still not durable
    expect(log).toEqual(["saveMeta keys begins"]);
    expect(db.records.size).toBe(0);
    expect(acknowledged).toBe(false);
    expect(peer.get("notes", "n1")).toEqual({ i: 1 }); // the index has it meanwhile
    release();
    await flushed;
    expect(log[1]).toBe("saveMeta keys durable");
    expect(log.slice(2).sort()).toEqual([expect.stringMatching(/^save _roster\//), "save notes/n1"]);
    expect(db.records.size).toBe(2);
    await peer.close();
  });

  it("a key write the adapter refuses: flushed() rejects with it, no record held meanwhile reaches the adapter, and every later write throws", async () => {
    const { db, adapter, fail } = gatedAdapter();
    const store = await openStore(adapter);
    store.saveKeys({ key: new Uint8Array(32).fill(1) });
    store.merge("notes", { key: "a", value: 1, is_deleted: false, hlc: "000000000001000-00000-n" });
    fail(new Error("quota exceeded"));
    await expect(store.flushed()).rejects.toThrow(/quota exceeded/);
    expect(db.records.size).toBe(0);
    expect(() => store.merge("notes", { key: "b", value: 2, is_deleted: false, hlc: "000000000002000-00000-n" })).toThrow(/quota exceeded/);
  });

  it("a record write the adapter rejects later: flushed() rejects, every later write throws, and the peer stops with a StoreFailedError", async () => {
    const db: MapDatabase = { records: new Map(), meta: new Map() };
    const inner = new MapAdapter(db);
    let refuse = false;
    const adapter: StorageAdapter = {
      loadAll: () => inner.loadAll(),
      loadMeta: (n) => inner.loadMeta(n),
      saveMeta: (n, v) => inner.saveMeta(n, v),
      close: () => inner.close(),
      save: async (row) => {
        if (refuse) throw new Error("the server said no");
        await inner.save(row);
      },
    };
    const peer = new PassnotePeer({
      transport: await new MemoryBus().connect(),
      store: await openStore(adapter),
      key: new Uint8Array(32).fill(2),
      antiEntropyIntervalMs: 0,
    });
    const errors: Error[] = [];
    peer.on("error", (e) => errors.push(e));
    peer.put("notes", "ok", 1);
    await peer.flushed();
    refuse = true;
    peer.put("notes", "refused", 2);
    await expect(peer.flushed()).rejects.toThrow(/the server said no/);
    expect(() => peer.put("notes", "after", 3)).toThrow(/the server said no/);
    expect(errors.map((e) => e.name)).toContain("StoreFailedError");
    expect([...db.records.keys()]).toEqual(["notes\0ok"]);
  });

  it("a peer restarted on its adapter's database gets back its records, its keys and its device", async () => {
    const db: MapDatabase = { records: new Map(), meta: new Map() };
    const bus = new MemoryBus();
    const first = new PassnotePeer({ transport: await bus.connect(), store: await openStore(new MapAdapter(db)), identity: foundGroup() });
    first.put("notes", "n1", { text: "kept" });
    await first.close();
    const again = new PassnotePeer({ transport: await bus.connect(), store: await openStore(new MapAdapter(db)) });
    expect(await again.read("notes", "n1")).toEqual({ text: "kept" });
    expect(again.engine.deviceId).toBe(first.engine.deviceId);
    expect(again.engine.isOwner).toBe(true);
    await again.close();
  });
});

describe("reading a value from a store that reads asynchronously", () => {
  it("peer.read() awaits a value the store does not hold in memory; peer.get() says to use it rather than answer as if the record were absent", async () => {
    const db: MapDatabase = { records: new Map(), meta: new Map() };
    const key = new Uint8Array(32).fill(4);
    const first = new PassnotePeer({ transport: await new MemoryBus().connect(), store: await openStore(new MapAdapter(db)), key });
    first.put("notes", "n1", { text: "in the database" });
    expect(first.get("notes", "n1")).toEqual({ text: "in the database" }); // not durable yet: still in memory
    await first.flushed();
    expect(() => first.get("notes", "n1")).toThrow(/await peer\.read\(\)/); // durable: memory let it go
    await first.close();
    const again = new PassnotePeer({ transport: await new MemoryBus().connect(), store: await openStore(new MapAdapter(db)) });
    expect(await again.read("notes", "n1")).toEqual({ text: "in the database" });
    expect(await again.read("notes", "absent")).toBeUndefined();
    expect(() => again.get("notes", "n1")).toThrow(/not in memory/);
    expect(again.get("notes", "absent")).toBeUndefined();
    await again.close();
  });
});

describe("docs/sdk.md: the storage adapter example", () => {
  it("runs as written (the package's import pointed at this checkout) and prints the record it kept across a restart", () => {
    const root = new URL("../../../../../", import.meta.url).pathname;
    const doc = readFileSync(join(root, "docs/sdk.md"), "utf8");
    const block = /```js\n\/\/ example: passnote-adapter\n([\s\S]*?)```/.exec(doc);
    expect(block, "docs/sdk.md has the passnote-adapter example").not.toBeNull();
    const dir = mkdtempSync(join(tmpdir(), "passnote-adapter-example-"));
    const file = join(dir, "example.mts");
    writeFileSync(file, block![1].replaceAll('"edge-relay/passnote"', JSON.stringify(join(root, "clients/passnote/index.ts"))));
    const r = spawnSync(process.execPath, ["--import", "tsx", file], { encoding: "utf8", timeout: 60_000, cwd: root });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("kept by my own adapter");
  }, 60_000);
});
