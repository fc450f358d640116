// A Passnote store in IndexedDB, for browsers. One IndexedDB database per Passnote database;
// each IndexedDbStore.open() is one instance (a tab, a worker) with its own inst token, and
// several may be open on one database at once: the records' object store merges last-writer-wins
// inside each transaction (read the stored record, write only a greater HLC), so no instance
// overwrites another's newer write.
//
// Writes: the merges of one turn of the event loop go into one readwrite transaction with
// durability "strict" (the browser reports it complete only once it is on disk); each record is
// put whole, so a document is never half-written. merge() returns at once (the engine's reads are
// from the in-memory index); flushed() resolves when every transaction so far is complete, which
// is when a write is acknowledged to the person. A transaction that fails makes flushed() reject.
//
// Keys: sealed with AES-GCM under a non-extractable CryptoKey the store generates on first open
// and keeps in the database as the key object itself (structured clone), which scripts can use
// but never read out; or, with `keys: { wrappingKey }`, under a key derived from a passphrase
// (XChaCha20-Poly1305), so that a copy of the profile alone does not open them.
import { DatabaseStore, type RecordRow } from "./database-store";
import { cryptoKeySeal, decodeKeys, wrappingKeySeal, type KeySeal } from "./keys";

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

export class IndexedDbStore extends DatabaseStore {
  private queue: RecordRow[] = [];
  private last: Promise<void> = Promise.resolve();
  private failure: unknown;

  private constructor(
    private readonly db: IDBDatabase,
    keySeal: KeySeal,
    private readonly factory: IDBFactory,
  ) {
    super(keySeal);
    // Another instance upgrading the schema: close this one rather than block it.
    db.onversionchange = () => db.close();
  }

  /** Opens (creating if needed) the IndexedDB database `name` as a new instance with a fresh inst token. */
  static async open(name: string, opts: IndexedDbStoreOptions = {}): Promise<IndexedDbStore> {
    const factory = opts.indexedDB ?? (globalThis as { indexedDB?: IDBFactory }).indexedDB;
    if (!factory) throw new Error("IndexedDbStore needs IndexedDB (a browser, or a worker of one)");
    const req = factory.open(name, 1);
    req.onupgradeneeded = () => {
      const db = req.result;
      if (!db.objectStoreNames.contains(RECORDS)) db.createObjectStore(RECORDS, { keyPath: ["collection", "key"] });
      if (!db.objectStoreNames.contains(META)) db.createObjectStore(META);
    };
    const db = await request(req);
    try {
      const seal =
        typeof opts.keys === "object" ? wrappingKeySeal(opts.keys.wrappingKey) : cryptoKeySeal(await IndexedDbStore.deviceKey(db));
      const store = new IndexedDbStore(db, seal, factory);
      await store.load();
      return store;
    } catch (e) {
      db.close();
      throw e;
    }
  }

  /** The database's own AES-GCM key: generated non-extractable on first use, kept as a CryptoKey. */
  private static async deviceKey(db: IDBDatabase): Promise<CryptoKey> {
    const held = await request(db.transaction(META, "readonly").objectStore(META).get("sealKey"));
    if (held) return held as CryptoKey;
    const key = await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
    // Two instances opening a new database at once: the first key written is the one kept.
    const tx = db.transaction(META, "readwrite", { durability: "strict" });
    const meta = tx.objectStore(META);
    const raced = await request(meta.get("sealKey"));
    if (!raced) meta.put(key, "sealKey");
    await done(tx);
    return (raced as CryptoKey | undefined) ?? key;
  }

  private async load(): Promise<void> {
    const tx = this.db.transaction([RECORDS, META], "readonly");
    const [rows, keys] = await Promise.all([request(tx.objectStore(RECORDS).getAll()), request(tx.objectStore(META).get("keys"))]);
    for (const row of rows as RecordRow[]) this.restore(row);
    if (keys) this.restoreKeys(decodeKeys(await this.keySeal.open(keys as Uint8Array)));
  }

  protected persist(row: RecordRow): void {
    if (this.failure) throw this.failure; // a failed transaction: refuse further writes, loudly
    if (this.queue.length === 0) queueMicrotask(() => this.commit());
    this.queue.push(row);
  }

  /** One readwrite transaction for the turn's writes, each merged last-writer-wins against the stored record. */
  private commit(): void {
    const rows = this.queue;
    this.queue = [];
    if (!rows.length) return;
    let tx: IDBTransaction;
    try {
      tx = this.db.transaction(RECORDS, "readwrite", { durability: "strict" });
    } catch (e) {
      this.failure = e;
      this.last = Promise.reject(e);
      this.last.catch(() => undefined);
      return;
    }
    const os = tx.objectStore(RECORDS);
    for (const row of rows) {
      const get = os.get([row.collection, row.key]);
      get.onsuccess = () => {
        const stored = get.result as RecordRow | undefined;
        if (!stored || row.hlc > stored.hlc) os.put(row);
      };
    }
    const finished = done(tx).catch((e) => {
      this.failure = e;
      throw e;
    });
    this.last = Promise.all([this.last, finished]).then(() => undefined);
    this.last.catch(() => undefined); // reported through flushed(), not as an unhandled rejection
  }

  protected async persistKeys(sealed: Uint8Array): Promise<void> {
    const tx = this.db.transaction(META, "readwrite", { durability: "strict" });
    tx.objectStore(META).put(sealed, "keys");
    await done(tx);
  }

  protected recordsFlushed(): Promise<void> {
    if (this.queue.length) this.commit();
    return this.last;
  }

  override async close(): Promise<void> {
    await this.flushed().catch(() => undefined);
    this.db.close();
  }

  /** Closes the store and deletes its IndexedDB database (the records, the keys and the key that seals them). */
  async destroy(): Promise<void> {
    await this.close();
    const factory = this.factory;
    await new Promise<void>((resolve, reject) => {
      const req = factory.deleteDatabase(this.db.name);
      req.onsuccess = () => resolve();
      req.onerror = () => reject(req.error);
    });
  }
}
