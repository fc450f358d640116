// The SDK's layer over any storage adapter (adapter.ts): the store the peer runs on. It owns
//   - the index the peer reads (MemoryStore: every read stays synchronous), built on open from
//     the adapter's records;
//   - the write order: a record goes to the adapter before the index, so a write the adapter
//     refused at once is not in the index either; flushed() resolves only once every write the
//     adapter was given so far is durable;
//   - keys first: the device's keys are durable before any record written after them (a crash
//     never leaves records and no keys, whose next start would found a new group over them);
//   - failure: an adapter write that failed makes flushed() reject and every later write throw,
//     and a closed store takes no write.
// The adapter merges last-writer-wins itself, which is what keeps two instances on one database
// from losing each other's writes: each holds its own index, and the database holds the winner.
import { compareHlc } from "../protocol/hlc";
import { MemoryStore, type Entry, type StoredKeys } from "../protocol/records";
import { ROSTER_COLLECTION } from "../protocol/roster";
import type { WireRecord } from "../protocol/wire";
import { fromRow, pending, toRow, type RecordRow, type StorageAdapter } from "./adapter";
import { decodeKeys, encodeKeys, plainKeySeal, wrappingKeySeal, type KeySeal } from "./keys";

/** The meta name the sealed keys are saved under. */
const KEYS_META = "keys";

export interface AdapterStoreOptions {
  /**
   * How the device's keys are kept: "plain" (the default) as they are; `{ wrappingKey }` sealed
   * (XChaCha20-Poly1305) under 32 bytes the app brings, e.g. derivePassphraseKey of a passphrase.
   */
  keys?: "plain" | { wrappingKey: Uint8Array };
}

export class AdapterStore extends MemoryStore {
  private keyWrites: Promise<void> = Promise.resolve();
  /**
   * Records merged while the keys' write is not durable yet: they wait for it. undefined: no key
   * write pending.
   */
  private held: RecordRow[] | undefined;
  private keyGeneration = 0;
  /** Record writes the adapter has not said are durable yet. */
  private readonly writes = new Set<Promise<void>>();
  /** The first failure: every later write throws it, and flushed() rejects with it. */
  private failure: unknown;
  private closed = false;

  protected constructor(
    readonly adapter: StorageAdapter,
    protected readonly keySeal: KeySeal,
  ) {
    super();
  }

  /**
   * Whether values stay in the database and are read when needed (the adapter has loadSync or
   * load): the index then holds no value but those not durable yet, and the roster's where reads
   * are asynchronous (the engine checks every frame against the roster synchronously).
   */
  private get onDemand(): boolean {
    return !!(this.adapter.loadSync || this.adapter.load);
  }

  /** Whether a collection's values stay in memory once durable. */
  private keepsValues(collection: string): boolean {
    return !this.onDemand || (collection === ROSTER_COLLECTION && !this.adapter.loadSync);
  }

  /** Reads the adapter's records into the index and its keys (no write). */
  protected async load(): Promise<void> {
    if (this.adapter.loadHeads && this.onDemand) {
      // The index in columns, one object per collection (SQLite aggregates them): no record value
      // read, no row object per record, nothing hashed.
      for (const h of await this.adapter.loadHeads()) this.restoreHeads(h.collection, h.keys, h.hlcs, h.fps);
    } else {
      const rows = await this.adapter.loadAll({ values: !this.onDemand });
      if (Symbol.iterator in rows) for (const row of rows) this.restore(row);
      else for await (const row of rows) this.restore(row);
    }
    if (this.keepsValues(ROSTER_COLLECTION) && this.onDemand) {
      // Asynchronous reads: the roster's values are read now and kept (a few records).
      for (const e of this.ordered(ROSTER_COLLECTION)) if (!e.record) e.record = await this.loadBody(ROSTER_COLLECTION, e);
    }
    const sealed = await this.adapter.loadMeta(KEYS_META);
    if (sealed) super.saveKeys(decodeKeys(await this.keySeal.open(sealed)));
  }

  /** Into the index: the whole record, or only its head where the adapter reads values on demand. */
  private restore(row: RecordRow): void {
    if (this.onDemand) this.mergeHead(row.collection, row.key, row.hlc, undefined, row.fp);
    else this.mergeWith(row.collection, fromRow(row), row.fp);
  }

  override merge(collection: string, record: WireRecord): boolean {
    const held = this.headHlc(collection, record.key);
    if (held !== undefined && compareHlc(record.hlc, held) <= 0) return false;
    this.check();
    const row = toRow(collection, record);
    // The value stays in memory while it is not durable (held for the keys, or its save pending),
    // and for good where the adapter cannot read it back (no loadSync, no load).
    let inMemory = this.keepsValues(collection);
    if (this.held) {
      this.held.push(row);
      inMemory = true;
    } else if (this.save(row)) inMemory = true;
    return this.mergeHead(collection, record.key, record.hlc, inMemory ? record : undefined, row.fp);
  }

  /** A record whose value the index does not hold: read from the database at once (loadSync). */
  protected override body(collection: string, e: Entry): WireRecord {
    if (e.record) return e.record;
    if (!this.adapter.loadSync)
      throw new Error(
        `the value of ${collection}/${e.key} is not in memory: this store reads values asynchronously (IndexedDB, an adapter without loadSync); await peer.read() or store.read()`,
      );
    return checked(collection, e, this.adapter.loadSync(collection, e.key));
  }

  /** A record whose value is not in memory, read through the adapter (load, awaited). */
  private async loadBody(collection: string, e: Entry): Promise<WireRecord> {
    const load = this.adapter.load ?? this.adapter.loadSync;
    if (!load) throw new Error(`the value of ${collection}/${e.key} is not in memory and the adapter cannot read it`);
    return checked(collection, e, await load.call(this.adapter, collection, e.key));
  }

  /**
   * The records of these keys: at once where every value is in memory or the adapter reads
   * synchronously, else read through the adapter's load (awaited together).
   */
  override read(collection: string, keys: readonly string[]): readonly WireRecord[] | Promise<readonly WireRecord[]> {
    if (this.adapter.loadSync || !this.adapter.load) return super.read(collection, keys);
    const out: Array<WireRecord | Promise<WireRecord>> = [];
    let waits = false;
    for (const key of keys) {
      const e = this.entry(collection, key);
      if (!e) continue;
      if (e.record) out.push(e.record);
      else {
        out.push(this.loadBody(collection, e));
        waits = true;
      }
    }
    return waits ? Promise.all(out) : (out as WireRecord[]);
  }

  /** Throws when the store takes no more writes (closed, or a write failed). */
  private check(): void {
    if (this.failure) throw this.failure;
    if (this.closed) throw new Error("the Passnote store was closed (store.close()): open it again to write");
  }

  /**
   * Hands one record to the adapter; a synchronous refusal throws here, a later one is kept for
   * flushed(). True while the write is pending (not durable when save() returned).
   */
  private save(row: RecordRow): boolean {
    let written: Promise<void> | undefined;
    try {
      written = pending(this.adapter.save(row));
    } catch (e) {
      this.failure ??= e;
      throw e;
    }
    if (!written) {
      this.durable(row);
      return false;
    }
    this.writes.add(written);
    written.then(
      () => {
        this.writes.delete(written);
        this.durable(row);
      },
      (e: unknown) => {
        this.failure ??= e;
        this.writes.delete(written);
      },
    );
    return true;
  }

  /** A record's write is durable: its value leaves memory where the adapter reads it back on demand. */
  private durable(row: RecordRow): void {
    if (this.keepsValues(row.collection)) return;
    const e = this.entry(row.collection, row.key);
    if (e?.record && e.hlc === row.hlc) e.record = undefined;
  }

  /**
   * Keeps the device's keys, before any record that follows: written at once where the seal and
   * the adapter are synchronous (SQLite), else every record merged meanwhile waits in memory
   * (and in the index) until the keys are durable. A key write that fails makes flushed() reject
   * and every later merge throw.
   */
  override saveKeys(keys: StoredKeys): void {
    this.check();
    super.saveKeys(keys);
    const plain = encodeKeys(keys);
    if (!this.held && this.keySeal.sealSync) {
      let written: Promise<void> | undefined;
      try {
        written = pending(this.adapter.saveMeta(KEYS_META, this.keySeal.sealSync(plain)));
      } catch (e) {
        this.failure ??= e;
        throw e;
      }
      if (written) this.hold(written);
      return;
    }
    this.hold(this.keyWrites.then(async () => this.adapter.saveMeta(KEYS_META, await this.keySeal.seal(plain))));
  }

  /** Holds record writes until `write` (the keys') is done, then writes them in order. */
  private hold(write: Promise<void>): void {
    this.held ??= [];
    const generation = ++this.keyGeneration;
    this.keyWrites = write.then(
      () => {
        if (generation !== this.keyGeneration) return; // a later key write holds them still
        const rows = this.held ?? [];
        this.held = undefined;
        for (const row of rows) this.save(row);
      },
      (e: unknown) => {
        this.failure ??= e;
        this.held = undefined;
        throw e;
      },
    );
    this.keyWrites.catch(() => undefined); // reported through flushed(), never as an unhandled rejection
  }

  override async flushed(): Promise<void> {
    await this.keyWrites;
    await Promise.all(this.writes);
    if (this.failure) throw this.failure;
  }

  /** Flushes (a failure is not thrown here: flushed() reports it), then closes the adapter. */
  override async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.flushed().catch(() => undefined);
    await this.adapter.close();
  }

  /** Closes the store and deletes its database (the adapter's destroy()). */
  async destroy(): Promise<void> {
    await this.close();
    await this.adapter.destroy?.();
  }
}

/** A row the adapter gave back for an index entry, as a record (a missing one means the database was changed behind the SDK). */
function checked(collection: string, e: Entry, row: RecordRow | undefined): WireRecord {
  if (!row) throw new Error(`the database no longer holds ${collection}/${e.key}: it was changed outside this SDK`);
  return fromRow(row);
}

/**
 * Opens a Passnote store over an app's own storage adapter: reads its records into the index and
 * its keys. The store is what the peer takes (`new PassnotePeer({ store, ... })`).
 */
export async function openStore(adapter: StorageAdapter, opts: AdapterStoreOptions = {}): Promise<AdapterStore> {
  const seal = opts.keys === undefined || opts.keys === "plain" ? plainKeySeal : wrappingKeySeal(opts.keys.wrappingKey);
  // The constructor and load() are the subclasses' (SqliteStore, IndexedDbStore); an app opens one here.
  const store = new (AdapterStore as unknown as new (a: StorageAdapter, s: KeySeal) => AdapterStore)(adapter, seal);
  await (store as unknown as { load(): Promise<void> }).load();
  return store;
}
