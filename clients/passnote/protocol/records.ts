// Records and their store (the Passnote protocol: records travel as (key, value, is_deleted, hlc, crdt_type?)).
// Where the Passnote protocol is silent (the roster, the CRDT merge of a field) this profile takes
// last-writer-wins by HLC for whole records: the record with the greater HLC string wins, an
// equal HLC changes nothing, so merging is idempotent, commutative and associative. crdt_type is
// carried and kept as written, never interpreted.
import { sha256 } from "@noble/hashes/sha2.js";
import { isWellFormedUnicode, utf8ByteLength, utf8Encode } from "../../../shared/encoding";
import { PASSNOTE_LIMITS as L } from "../../../shared/limits";
import { Writer } from "./codec";
import { compareHlc } from "./hlc";
import { newInstToken } from "./handshake";
import type { DeviceIdentity } from "./roster";
import { Collection, type Entry } from "./record-index";
import type { Range, WireRecord } from "./wire";

export type { Entry } from "./record-index";
import { FINGERPRINT_BYTES, encodeRecord } from "./wire";

/** The widest range: every HLC wall time a record can have. */
export const FULL_RANGE: Range = { start: 0, end: Number.MAX_SAFE_INTEGER };

/** SHA-256(key ‖ 0x00 ‖ hlc) truncated to 16 bytes: one record's share of a range fingerprint. */
export function recordFingerprint(key: string, hlc: string): Uint8Array {
  const k = utf8Encode(key);
  const h = utf8Encode(hlc);
  const buf = new Uint8Array(k.length + 1 + h.length);
  buf.set(k, 0);
  buf.set(h, k.length + 1);
  return sha256(buf).subarray(0, FINGERPRINT_BYTES);
}

export interface RangeSummary {
  count: number;
  /** XOR of the records' fingerprints: order-independent and splittable. */
  fingerprint: Uint8Array;
  /** Smallest and largest wall time of the records in the range (undefined when empty). */
  minWall?: number;
  maxWall?: number;
}

/** The keys a database keeps for its device: identity mode's credentials, or the passphrase key. */
export type StoredKeys = { identity: DeviceIdentity } | { key: Uint8Array };

/**
 * What the Passnote peer keeps in its database, one store per open database instance (the Passnote protocol:
 * "a random token minted per open database instance"). Reads are synchronous (a store holds an
 * index of its records in memory, loaded on open); a write is one document (one record of one
 * collection), stored whole or not at all, and merged last-writer-wins by HLC in the database
 * itself, so two instances on one database (two tabs, two processes) never lose each other's
 * writes. What the Passnote protocol needs back on reopen comes from here: the records (and with them every
 * collection's watermark and the roster, a collection like the others), the HLC the clock must
 * pass, and the device's keys.
 */
export interface PassnoteStore {
  /** This open instance's inst token (16 hex), minted when it was opened: never shared by two instances. */
  readonly inst: string;
  /** The sequence number of the last record stored by this instance (0 when none). */
  readonly sequence: number;
  collectionNames(): string[];
  /**
   * One record, synchronously: from memory, or from a database that reads synchronously (SQLite).
   * A store that reads its values asynchronously (IndexedDB, an adapter without loadSync) throws
   * for a value it does not hold in memory: read() is the way that always works.
   */
  get(collection: string, key: string): WireRecord | undefined;
  /**
   * The records held under these keys, in the order given (keys not held are left out): an array
   * at once where the store can, else a promise of it (a store whose values are read
   * asynchronously). This is how the engine reads what it ships to a peer.
   */
  read(collection: string, keys: readonly string[]): readonly WireRecord[] | Promise<readonly WireRecord[]>;
  /** Every record of a collection, synchronously (as get()). */
  all(collection: string): WireRecord[];
  size(collection: string): number;
  /** Last-writer-wins merge of one whole record; true when it changed the store. Idempotent. */
  merge(collection: string, record: WireRecord): boolean;
  /** The highest HLC held in a collection ("" when empty): the collection's watermark in `state`. */
  watermark(collection: string): string;
  summary(collection: string, range?: Range): RangeSummary;
  ordered(collection: string): readonly Entry[];
  recordsIn(collection: string, range: Range): WireRecord[];
  newerThan(collection: string, watermark: string): WireRecord[];
  changedSince(collection: string, seq: number, watermark: string): WireRecord[];
  /** The highest HLC this database holds ("" when none): a reopened clock moves past it. */
  clock(): string;
  /** The device's keys, if the database holds them. */
  keys(): StoredKeys | undefined;
  /** Keeps the device's keys (sealed where the store can); durable once flushed() resolves. */
  saveKeys(keys: StoredKeys): void;
  /**
   * Resolves once every write made so far (merges and keys) is durable: a crash after it loses
   * none of them. Rejects if one of them could not be stored.
   */
  flushed(): Promise<void>;
  /** Closes the instance (after flushing); its inst token is not used again. */
  close(): Promise<void>;
  /** Deletes the database itself (its files, its IndexedDB database), once closed. Optional. */
  destroy?(): Promise<void>;
}

/** An in-memory record store: the index every store keeps, and the store of a peer that keeps nothing. */
export class MemoryStore implements PassnoteStore {
  private readonly collections = new Map<string, Collection>();
  private seq = 0;
  private highest = "";
  private stored: StoredKeys | undefined;
  readonly inst: string = newInstToken();

  /** The sequence number of the last record stored (0 when none): every merge that changes the store takes the next one. */
  get sequence(): number {
    return this.seq;
  }

  private col(name: string): Collection {
    let c = this.collections.get(name);
    if (!c) {
      c = new Collection();
      this.collections.set(name, c);
    }
    return c;
  }

  collectionNames(): string[] {
    return [...this.collections.keys()];
  }

  get(collection: string, key: string): WireRecord | undefined {
    const e = this.collections.get(collection)?.byKey.get(key);
    return e && this.body(collection, e);
  }

  read(collection: string, keys: readonly string[]): readonly WireRecord[] | Promise<readonly WireRecord[]> {
    const out: WireRecord[] = [];
    for (const key of keys) {
      const r = this.get(collection, key);
      if (r) out.push(r);
    }
    return out;
  }

  /** The index's entry for a key (no body read). */
  protected entry(collection: string, key: string): Entry | undefined {
    return this.collections.get(collection)?.byKey.get(key);
  }

  /** The HLC of the record the index holds for a key (no body read). */
  protected headHlc(collection: string, key: string): string | undefined {
    return this.collections.get(collection)?.byKey.get(key)?.hlc;
  }

  /**
   * An entry's record: the one in memory, or read from the database by a store that keeps only
   * the index (it overrides this). The record's HLC may be newer than the entry's where another
   * instance wrote to the same database meanwhile (the database keeps the winner).
   */
  protected body(collection: string, e: Entry): WireRecord {
    if (!e.record) throw new Error(`the record ${collection}/${e.key} is not in memory`);
    return e.record;
  }

  all(collection: string): WireRecord[] {
    return [...(this.collections.get(collection)?.entries() ?? [])].map((e) => this.body(collection, e));
  }

  size(collection: string): number {
    return this.collections.get(collection)?.size ?? 0;
  }

  /** Last-writer-wins merge; true when the record changed the store. Idempotent. */
  merge(collection: string, record: WireRecord): boolean {
    return this.mergeWith(collection, record);
  }

  /**
   * merge() with the record's fingerprint when the caller has it (a database store computes it
   * once, keeps it beside the record, and gives it back on reopen).
   */
  protected mergeWith(collection: string, record: WireRecord, fp?: Uint8Array): boolean {
    return this.mergeHead(collection, record.key, record.hlc, record, fp);
  }

  /**
   * Restores a collection's index from columns (HeadColumns of a database store): the i-th key,
   * HLC and 16 bytes of `fps` are one record's, its body left in the database (body()). Into an
   * empty collection in one pass; else record by record, last-writer-wins.
   */
  protected restoreHeads(collection: string, keys: readonly string[], hlcs: readonly string[], fps: Uint8Array): void {
    if (keys.length !== hlcs.length || fps.length !== keys.length * FINGERPRINT_BYTES)
      throw new Error(
        `the index of ${collection} does not line up: ${keys.length} keys, ${hlcs.length} HLCs, ${fps.length} fingerprint bytes`,
      );
    const c = this.col(collection);
    if (c.size === 0) {
      c.fill(keys, hlcs, fps, this.seq);
      this.seq += keys.length;
      if (compareHlc(c.watermark, this.highest) > 0) this.highest = c.watermark;
      return;
    }
    for (let i = 0; i < keys.length; i++)
      this.mergeHead(collection, keys[i], hlcs[i], undefined, fps.subarray(i * FINGERPRINT_BYTES, (i + 1) * FINGERPRINT_BYTES));
  }

  /** Puts a record into the index; `record` undefined: its body stays in the database (body()). */
  protected mergeHead(collection: string, key: string, hlc: string, record: WireRecord | undefined, fp?: Uint8Array): boolean {
    const c = this.col(collection);
    const held = c.byKey.get(key);
    if (held && compareHlc(hlc, held.hlc) <= 0) return false;
    c.put(key, hlc, record, ++this.seq, fp?.length === FINGERPRINT_BYTES ? fp : recordFingerprint(key, hlc));
    if (compareHlc(hlc, this.highest) > 0) this.highest = hlc;
    return true;
  }

  clock(): string {
    return this.highest;
  }

  keys(): StoredKeys | undefined {
    return this.stored;
  }

  saveKeys(keys: StoredKeys): void {
    this.stored = keys;
  }

  flushed(): Promise<void> {
    return Promise.resolve();
  }

  async close(): Promise<void> {}

  /** The highest HLC held in a collection ("" when empty). */
  watermark(collection: string): string {
    return this.collections.get(collection)?.watermark ?? "";
  }

  summary(collection: string, range: Range = FULL_RANGE): RangeSummary {
    const entries = this.collections.get(collection)?.slice(range) ?? [];
    const fingerprint = new Uint8Array(FINGERPRINT_BYTES);
    for (const e of entries) for (let i = 0; i < FINGERPRINT_BYTES; i++) fingerprint[i] ^= e.fp[i];
    return {
      count: entries.length,
      fingerprint,
      minWall: entries[0]?.wall,
      maxWall: entries.length ? entries[entries.length - 1].wall : undefined,
    };
  }

  /** A collection's records ordered by (wall, fingerprint), recon2's item order (kept until the next write). */
  ordered(collection: string): readonly Entry[] {
    return this.collections.get(collection)?.byWallAndId() ?? [];
  }

  recordsIn(collection: string, range: Range): WireRecord[] {
    return (this.collections.get(collection)?.slice(range) ?? []).map((e) => this.body(collection, e));
  }

  /** Records newer than a watermark (the fallback sync without recon1). */
  newerThan(collection: string, watermark: string): WireRecord[] {
    const out: WireRecord[] = [];
    for (const e of this.collections.get(collection)?.entries() ?? []) {
      if (compareHlc(e.hlc, watermark) > 0) out.push(this.body(collection, e));
    }
    return out;
  }

  /**
   * The fallback's incremental pass: records stored after sequence number `seq` (whatever their
   * HLC: an old record learnt from a third peer included) or newer than the peer's watermark.
   */
  changedSince(collection: string, seq: number, watermark: string): WireRecord[] {
    const out: WireRecord[] = [];
    for (const e of this.collections.get(collection)?.entries() ?? []) {
      if (e.seq > seq || compareHlc(e.hlc, watermark) > 0) out.push(this.body(collection, e));
    }
    return out;
  }
}

/** A local write the wire could not carry exactly, or whose peers could not read it: refused. */
export class WriteRefusedError extends RangeError {
  constructor(
    message: string,
    /** The bound it broke (a PASSNOTE_LIMITS name) or "unicode". */
    readonly bound: string,
  ) {
    super(message);
    this.name = "WriteRefusedError";
  }
}

function checkName(what: string, s: string): void {
  if (!isWellFormedUnicode(s)) throw new WriteRefusedError(`the ${what} holds a lone surrogate: it would not arrive as written`, "unicode");
  const n = utf8ByteLength(s);
  if (n > L.max_name_bytes)
    throw new WriteRefusedError(`the ${what} is ${n} bytes of UTF-8; peers read at most ${L.max_name_bytes}`, "max_name_bytes");
}

/**
 * Checks a local write against what every peer's decoder accepts, before it is stored: collection,
 * key and crdt type at most max_name_bytes of well-formed UTF-8, a value the tagged encoding
 * carries exactly, and the whole record at most record_max_bytes encoded (a delta carrying it
 * alone then fits in one binary message). Throws WriteRefusedError.
 */
export function checkLocalWrite(collection: string, record: WireRecord): void {
  checkName("collection name", collection);
  checkName("key", record.key);
  if (record.crdt_type !== undefined) checkName("crdt type", record.crdt_type);
  let size: number;
  try {
    size = encodeRecord(new Writer(), record).finish().length;
  } catch (e) {
    throw new WriteRefusedError(
      `the value cannot travel: ${(e as Error).message}`,
      e instanceof RangeError && /nested/.test((e as Error).message) ? "max_value_depth" : "value",
    );
  }
  if (size > L.record_max_bytes)
    throw new WriteRefusedError(
      `the record is ${size} bytes encoded; at most ${L.record_max_bytes} fit in one message`,
      "record_max_bytes",
    );
}
