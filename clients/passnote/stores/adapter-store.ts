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
import { compareHlc } from "../../../shared/passnote/hlc";
import { MemoryStore, type Entry, type StoredKeys } from "../../../shared/passnote/records";
import type { WireRecord } from "../../../shared/passnote/wire";
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

  /** Reads the adapter's records into the index and its keys (no write). */
  protected async load(): Promise<void> {
    if (this.adapter.loadHeads && this.adapter.loadSync) {
      // The index in columns, one object per collection (SQLite aggregates them): no record value
      // read, no row object per record, nothing hashed.
      for (const h of await this.adapter.loadHeads()) this.restoreHeads(h.collection, h.keys, h.hlcs, h.fps);
    } else {
      const rows = await this.adapter.loadAll({ values: !this.adapter.loadSync });
      if (Symbol.iterator in rows) for (const row of rows) this.restore(row);
      else for await (const row of rows) this.restore(row);
    }
    const sealed = await this.adapter.loadMeta(KEYS_META);
    if (sealed) super.saveKeys(decodeKeys(await this.keySeal.open(sealed)));
  }

  /** Into the index: the whole record, or only its head where the adapter reads bodies on demand (loadSync). */
  private restore(row: RecordRow): void {
    if (this.adapter.loadSync) this.mergeHead(row.collection, row.key, row.hlc, undefined, row.fp);
    else this.mergeWith(row.collection, fromRow(row), row.fp);
  }

  override merge(collection: string, record: WireRecord): boolean {
    const held = this.headHlc(collection, record.key);
    if (held !== undefined && compareHlc(record.hlc, held) <= 0) return false;
    this.check();
    const row = toRow(collection, record);
    // The body stays in memory unless the adapter can read it back at once: it has loadSync, and
    // this write is in the database already (not held for the keys, not pending).
    let inMemory = !this.adapter.loadSync;
    if (this.held) {
      this.held.push(row);
      inMemory = true;
    } else if (this.save(row)) inMemory = true;
    return this.mergeHead(collection, record.key, record.hlc, inMemory ? record : undefined, row.fp);
  }

  /** A record whose body the index does not hold: read from the database (loadSync). */
  protected override body(collection: string, e: Entry): WireRecord {
    if (e.record) return e.record;
    const row = this.adapter.loadSync?.(collection, e.key);
    if (!row) throw new Error(`the database no longer holds ${collection}/${e.key}: it was changed outside this SDK`);
    return fromRow(row);
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
    if (!written) return false; // durable already
    this.writes.add(written);
    written.then(
      () => this.writes.delete(written),
      (e: unknown) => {
        this.failure ??= e;
        this.writes.delete(written);
      },
    );
    return true;
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
