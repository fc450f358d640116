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
    const row = toRow(collection, record);
    this.persist(row);
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

  override saveKeys(keys: StoredKeys): void {
    super.saveKeys(keys);
    const plain = encodeKeys(keys);
    this.keyWrites = this.keyWrites.then(async () => this.persistKeys(await this.keySeal.seal(plain)));
    this.keyWrites.catch(() => undefined); // reported through flushed(), never as an unhandled rejection
  }

  override async flushed(): Promise<void> {
    await Promise.all([this.keyWrites, this.recordsFlushed()]);
  }
}
