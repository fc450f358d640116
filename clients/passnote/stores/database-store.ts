// What the two database stores share: the in-memory index (MemoryStore, so the engine's reads stay
// synchronous), loaded from the database on open, and a write path that puts a record into the
// database before the index, so a write the database refused is not in the index either. The
// database merges last-writer-wins itself (a record replaces the stored one only with a greater
// HLC), which is what keeps two instances on one database from losing each other's writes: each
// holds its own index, and the database holds the winner of every document.
import { encodeValue, decodeValue } from "../../../shared/passnote/codec";
import { MemoryStore, recordFingerprint, wins, type StoredKeys } from "../../../shared/passnote/records";
import type { WireRecord } from "../../../shared/passnote/wire";
import { encodeKeys, type KeySeal } from "./keys";

/**
 * One record as a database row: the value in the wire's tagged encoding, and the record's
 * fingerprint (reconciliation's share of it), kept so that a reopen does not hash every record.
 */
export interface RecordRow {
  collection: string;
  key: string;
  hlc: string;
  deleted: number;
  crdt_type: string | null;
  value: Uint8Array;
  fp: Uint8Array;
}

export function toRow(collection: string, r: WireRecord, fp = recordFingerprint(r.key, r.hlc)): RecordRow {
  return {
    collection,
    key: r.key,
    hlc: r.hlc,
    deleted: r.is_deleted ? 1 : 0,
    crdt_type: r.crdt_type ?? null,
    value: encodeValue(r.value),
    fp,
  };
}

export function fromRow(row: RecordRow): WireRecord {
  const v = decodeValue(row.value);
  if (!v) throw new Error(`a stored record does not decode (${row.collection}/${row.key}): the database was changed outside this SDK`);
  return {
    key: row.key,
    value: v.value,
    is_deleted: !!row.deleted,
    hlc: row.hlc,
    ...(row.crdt_type !== null ? { crdt_type: row.crdt_type } : {}),
  };
}

export abstract class DatabaseStore extends MemoryStore {
  private keyWrites: Promise<void> = Promise.resolve();
  /**
   * Records merged while the keys' write is not durable yet: they wait for it, so that a crash
   * never leaves a database with records and no keys (whose next start would found a new group
   * over them). undefined: no key write pending.
   */
  private held: RecordRow[] | undefined;
  private keyFailure: unknown;
  private keyGeneration = 0;

  constructor(protected readonly keySeal: KeySeal) {
    super();
  }

  /** Puts one whole record into the database, kept only if its HLC beats the stored one. Throws when refused. */
  protected abstract persist(row: RecordRow): void;
  /** Puts the sealed keys into the database. */
  protected abstract persistKeys(sealed: Uint8Array): Promise<void> | void;
  /** Resolves when the writes handed to persist() so far are durable. */
  protected abstract recordsFlushed(): Promise<void>;

  override merge(collection: string, record: WireRecord): boolean {
    if (!wins(record, this.get(collection, record.key))) return false;
    if (this.keyFailure) throw this.keyFailure;
    const row = toRow(collection, record);
    if (this.held) this.held.push(row);
    else this.persist(row);
    return this.mergeWith(collection, record, row.fp);
  }

  /** Adds a record read from the database to the index (no write). */
  protected restore(row: RecordRow): void {
    this.mergeWith(row.collection, fromRow(row), row.fp);
  }

  /** Adds keys read from the database (no write). */
  protected restoreKeys(keys: StoredKeys): void {
    super.saveKeys(keys);
  }

  /**
   * Keeps the device's keys, before any record that follows: written at once where the seal and
   * the database are synchronous (SQLite), else every record merged meanwhile waits in memory
   * (and in the index) until the keys are durable. A key write that fails makes flushed() reject
   * and every later merge throw.
   */
  override saveKeys(keys: StoredKeys): void {
    if (this.keyFailure) throw this.keyFailure;
    super.saveKeys(keys);
    const plain = encodeKeys(keys);
    if (!this.held && this.keySeal.sealSync) {
      const written = this.persistKeys(this.keySeal.sealSync(plain));
      if (!(written instanceof Promise)) return; // durable already
      this.hold(written);
      return;
    }
    this.hold(this.keyWrites.then(async () => this.persistKeys(await this.keySeal.seal(plain))));
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
        for (const row of rows) this.persist(row);
      },
      (e: unknown) => {
        this.keyFailure = e;
        this.held = undefined;
        throw e;
      },
    );
    this.keyWrites.catch(() => undefined); // reported through flushed(), never as an unhandled rejection
  }

  override async flushed(): Promise<void> {
    await this.keyWrites;
    await this.recordsFlushed();
  }
}
