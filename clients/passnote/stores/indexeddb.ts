// A Passnote store in IndexedDB, for browsers. One IndexedDB database per Passnote database;
// each IndexedDbStore.open() is one instance (a tab, a worker) with its own inst token, and
// several may be open on one database at once: the records' object store merges last-writer-wins
// inside each transaction (read the stored record, write only a greater HLC), so no instance
// overwrites another's newer write.
//
// Writes: the merges of one turn of the event loop go into one readwrite transaction with
// durability "strict" (the browser reports it complete only once it is on disk); each record is
// put whole, so a document is never half-written. merge() returns at once (the engine's reads are
// from the in-memory index); a value leaves memory once its write is complete, and is read again
// when it is needed (load(): a shipment to a peer, peer.read()); flushed() resolves when every transaction so far is complete, which
// is when a write is acknowledged to the person. A transaction that fails makes flushed() reject.
//
// Keys: sealed with AES-GCM under a non-extractable CryptoKey the store generates on first open
// and keeps in the database as the key object itself (structured clone), which scripts can use
// but never read out; or, with `keys: { wrappingKey }`, under a key derived from a passphrase
// (XChaCha20-Poly1305), so that a copy of the profile alone does not open them.
import type { RecordRow, StorageAdapter } from "./adapter";
import { AdapterStore } from "./adapter-store";
import { cryptoKeySeal, wrappingKeySeal } from "./keys";

export interface IndexedDbStoreOptions {
  /** Default: a non-extractable AES-GCM key kept in the database. `{ wrappingKey }`: 32 bytes the app derives (derivePassphraseKey). */
  keys?: "device" | { wrappingKey: Uint8Array };
  /** The IndexedDB factory (default: globalThis.indexedDB). */
  indexedDB?: IDBFactory;
}

const RECORDS = "records";
const META = "meta";

function request<T>(r: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

function done(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error ?? new Error("IndexedDB transaction failed"));
    tx.onabort = () => reject(tx.error ?? new Error("IndexedDB transaction aborted"));
  });
}

/** An IndexedDB database as a storage adapter: a turn's saves share one strict readwrite transaction. */
export class IndexedDbAdapter implements StorageAdapter {
  private queue: RecordRow[] = [];
  /** The transaction the queued rows will go in: resolves once it is complete. */
  private turn: Promise<void> | undefined;
  private settle: { resolve(): void; reject(e: unknown): void } | undefined;

  private constructor(
    private readonly db: IDBDatabase,
    private readonly factory: IDBFactory,
  ) {
    // Another instance upgrading the schema: close this one rather than block it.
    db.onversionchange = () => db.close();
  }

  /** Opens (creating if needed) the IndexedDB database `name`. */
  static async open(name: string, factory = (globalThis as { indexedDB?: IDBFactory }).indexedDB): Promise<IndexedDbAdapter> {
    if (!factory) throw new Error("IndexedDbStore needs IndexedDB (a browser, or a worker of one)");
    const req = factory.open(name, 1);
    req.onupgradeneeded = () => {
      const db = req.result;
      if (!db.objectStoreNames.contains(RECORDS)) db.createObjectStore(RECORDS, { keyPath: ["collection", "key"] });
      if (!db.objectStoreNames.contains(META)) db.createObjectStore(META);
    };
    return new IndexedDbAdapter(await request(req), factory);
  }

  /** The database's own AES-GCM key: generated non-extractable on first use, kept as a CryptoKey. */
  async deviceKey(): Promise<CryptoKey> {
    const held = await request(this.db.transaction(META, "readonly").objectStore(META).get("sealKey"));
    if (held) return held as CryptoKey;
    const key = await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
    // Two instances opening a new database at once: the first key written is the one kept.
    const tx = this.db.transaction(META, "readwrite", { durability: "strict" });
    const meta = tx.objectStore(META);
    const raced = await request(meta.get("sealKey"));
    if (!raced) meta.put(key, "sealKey");
    await done(tx);
    return (raced as CryptoKey | undefined) ?? key;
  }

  /** Every record (the store keeps their index only: it reads a value again with load() when it needs it). */
  async loadAll(): Promise<RecordRow[]> {
    return (await request(this.db.transaction(RECORDS, "readonly").objectStore(RECORDS).getAll())) as RecordRow[];
  }

  private reads: Array<{ id: [string, string]; resolve(r: RecordRow | undefined): void; reject(e: unknown): void }> = [];

  /** One record; the reads of one turn share one readonly transaction (a shipment reads many). */
  load(collection: string, key: string): Promise<RecordRow | undefined> {
    return new Promise((resolve, reject) => {
      if (!this.reads.length) queueMicrotask(() => this.readTurn());
      this.reads.push({ id: [collection, key], resolve, reject });
    });
  }

  private readTurn(): void {
    const reads = this.reads;
    this.reads = [];
    try {
      const os = this.db.transaction(RECORDS, "readonly").objectStore(RECORDS);
      for (const r of reads) {
        const get = os.get(r.id);
        get.onsuccess = () => r.resolve(get.result as RecordRow | undefined);
        get.onerror = () => r.reject(get.error);
      }
    } catch (e) {
      for (const r of reads) r.reject(e);
    }
  }

  /** Queued for the turn's transaction; resolves once that transaction is complete (on disk). */
  save(row: RecordRow): Promise<void> {
    if (!this.turn) {
      this.turn = new Promise<void>((resolve, reject) => (this.settle = { resolve, reject }));
      queueMicrotask(() => this.commit());
    }
    this.queue.push(row);
    return this.turn;
  }

  /** One readwrite transaction for the turn's writes, each merged last-writer-wins against the stored record. */
  private commit(): void {
    const rows = this.queue;
    const settle = this.settle!;
    this.queue = [];
    this.turn = undefined;
    this.settle = undefined;
    try {
      const tx = this.db.transaction(RECORDS, "readwrite", { durability: "strict" });
      const os = tx.objectStore(RECORDS);
      for (const row of rows) {
        const get = os.get([row.collection, row.key]);
        get.onsuccess = () => {
          const stored = get.result as RecordRow | undefined;
          if (!stored || row.hlc > stored.hlc) os.put(row);
        };
      }
      done(tx).then(settle.resolve, settle.reject);
    } catch (e) {
      settle.reject(e);
    }
  }

  async loadMeta(name: string): Promise<Uint8Array | undefined> {
    return (await request(this.db.transaction(META, "readonly").objectStore(META).get(name))) as Uint8Array | undefined;
  }

  async saveMeta(name: string, value: Uint8Array): Promise<void> {
    const tx = this.db.transaction(META, "readwrite", { durability: "strict" });
    tx.objectStore(META).put(value, name);
    await done(tx);
  }

  close(): void {
    this.db.close();
  }

  /** Deletes the IndexedDB database (the records, the keys and the key that seals them), once closed. */
  async destroy(): Promise<void> {
    this.db.close();
    await new Promise<void>((resolve, reject) => {
      const req = this.factory.deleteDatabase(this.db.name);
      req.onsuccess = () => resolve();
      req.onerror = () => reject(req.error);
    });
  }
}

/** A Passnote store in IndexedDB: the SDK's layer (AdapterStore) over an IndexedDbAdapter. */
export class IndexedDbStore extends AdapterStore {
  /** Opens (creating if needed) the IndexedDB database `name` as a new instance with a fresh inst token. */
  static async open(name: string, opts: IndexedDbStoreOptions = {}): Promise<IndexedDbStore> {
    const adapter = await IndexedDbAdapter.open(name, opts.indexedDB ?? (globalThis as { indexedDB?: IDBFactory }).indexedDB);
    try {
      const seal = typeof opts.keys === "object" ? wrappingKeySeal(opts.keys.wrappingKey) : cryptoKeySeal(await adapter.deviceKey());
      const store = new IndexedDbStore(adapter, seal);
      await store.load();
      return store;
    } catch (e) {
      adapter.close();
      throw e;
    }
  }
}
