// The storage adapter: what an app implements to keep a Passnote peer's records in its own
// database (a file, a key-value store, a server). It is small on purpose (automerge-repo's
// StorageAdapter is the model): five methods over whole records and named blobs, no index, no
// ordering rules. What makes a store safe is the SDK's (adapter-store.ts): the index the peer
// reads, the keys written before any record, a write acknowledged only once the adapter says it
// is durable, and the refusal of every write after a failure.
import { decodeValue, encodeValue } from "../protocol/codec";
import { recordFingerprint } from "../protocol/records";
import type { WireRecord } from "../protocol/wire";

/**
 * One record as an adapter keeps it: its identity (collection, key), its HLC (the order of its
 * versions), and the rest as plain fields to store as they are. `fp` is the record's
 * fingerprint, kept so that a reopen hashes nothing.
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

/**
 * The index of one collection in columns, as opening needs it: the records' keys, their HLCs and
 * their fingerprints (16 bytes each, concatenated), the i-th of each being one record's, in any
 * order. No value, and one object per collection rather than per record.
 */
export interface HeadColumns {
  collection: string;
  keys: string[];
  hlcs: string[];
  fps: Uint8Array;
}

/** What an adapter's write returns: a promise that resolves once the write is durable, or nothing when it already is. */
export type Durable = Promise<void> | void;

/**
 * A database a Passnote store keeps its records in. Every method may be asynchronous.
 *
 * - `loadAll()`: every record held, in any order (read once, when the store opens).
 * - `save(row)`: keeps one record whole, unless the database holds a record of the same
 *   (collection, key) whose `hlc` is at least as great (compare the strings): last-writer-wins
 *   inside the database, so two instances on one database never lose each other's writes. It
 *   resolves once the record is durable (a crash after it loses nothing), or rejects.
 * - `loadMeta(name)` / `saveMeta(name, value)`: a named blob (the device's keys, sealed).
 * - `close()`: releases the database. After it, the store sends the adapter nothing more.
 * - `destroy()` (optional): deletes the database itself, once closed.
 * - `loadSync(collection, key)` (optional, for databases that read synchronously, as SQLite does):
 *   one record, or undefined. With it the store keeps only its index in memory (keys, HLCs,
 *   fingerprints) and reads a record's value when it is needed; `loadAll({ values: false })` may
 *   then leave every row's `value` empty.
 * - `load(collection, key)` (optional, for databases that read asynchronously: IndexedDB, a
 *   server): one record, or undefined, as a promise. With it, as with loadSync, the store keeps
 *   only its index in memory; the peer awaits the values it ships, and the app reads one with
 *   `peer.read()`. Without either, the store keeps every value in memory.
 * - `loadHeads()` (optional, with `loadSync` or `load`): the index of every collection in columns
 *   (HeadColumns), read in place of `loadAll` when the store opens: what a database that can
 *   aggregate (SQLite) gives at a fraction of the cost of one row object per record.
 */
export interface StorageAdapter {
  loadAll(opts?: { values: boolean }): Promise<Iterable<RecordRow>> | Iterable<RecordRow> | AsyncIterable<RecordRow>;
  save(row: RecordRow): Durable;
  loadMeta(name: string): Promise<Uint8Array | undefined> | Uint8Array | undefined;
  saveMeta(name: string, value: Uint8Array): Durable;
  close(): Promise<void> | void;
  destroy?(): Promise<void> | void;
  loadSync?(collection: string, key: string): RecordRow | undefined;
  load?(collection: string, key: string): Promise<RecordRow | undefined> | RecordRow | undefined;
  loadHeads?(): Promise<Iterable<HeadColumns>> | Iterable<HeadColumns>;
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
    ...(row.crdt_type !== null && row.crdt_type !== undefined ? { crdt_type: row.crdt_type } : {}),
  };
}

/** An adapter's write result as a promise, or undefined when the write was durable before it returned. */
export function pending(d: Durable): Promise<void> | undefined {
  return d && typeof (d as Promise<void>).then === "function" ? (d as Promise<void>) : undefined;
}
