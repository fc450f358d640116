// What a Tally client keeps across restarts (the Tally protocol sections 7, 8.2 and 12): the outbox of
// unacknowledged messages, the set of processed message ids with each one's receipt result, and
// the ledger keyed by (from_user_id, id). One small interface, with an implementation over any
// key-value store (memory, a file, IndexedDB, localStorage).
import type { PeerEnvelope } from "../../shared/tally/envelope";
import type { LedgerEntry } from "../../shared/tally/entry";
import { CLIENT_LIMITS } from "./limits";
import { historyKey } from "./history-key";

/** Set once the ledger's time index is built (older stores have entries without it). */
const HISTORY_BUILT = "history-index/v1";

export interface OutboxItem {
  id: string;
  to_user_id: string;
  /** The sealed envelope, made once: every retry sends the same bytes, the same id and proof. */
  envelope: PeerEnvelope;
  created_at: number;
  attempts: number;
  last_attempt_at: number;
}

/** The receipt result that keeps a message out of the ledger (8.1, 12.8). */
export const IGNORED_RESULT = "ignored";

/** A message named by its key (3.1, 7): its author and its id. */
export interface MessageKey {
  from_user_id: string;
  id: string;
}

export interface ProcessedRecord {
  at: number;
  /** The result the receipt said (8.1); absent while the message is being applied. */
  result?: string;
}

export interface TallyStore {
  putOutbox(item: OutboxItem): Promise<void>;
  getOutbox(id: string): Promise<OutboxItem | undefined>;
  deleteOutbox(id: string): Promise<void>;
  listOutbox(): Promise<OutboxItem[]>;
  /** Whether (from_user_id, id) was processed already. */
  hasProcessed(fromUserId: string, id: string): Promise<boolean>;
  /** The processed record of (from_user_id, id): when, and the receipt result once known (8.1). */
  getProcessed(fromUserId: string, id: string): Promise<ProcessedRecord | undefined>;
  /**
   * Records (from_user_id, id) as processed with its receipt result. A message recorded
   * "ignored" stays known as ignored after the processed set forgot the id (getProcessed keeps
   * answering it, and listIgnored names it), so sync does not hand it to the app again (3.1, 7)
   * and hellos name it (12.5, 12.6), within CLIENT_LIMITS.ignored_ttl_ms and max_ignored_marks.
   */
  addProcessed(fromUserId: string, id: string, at: number, result?: string): Promise<void>;
  /** Every message recorded "ignored". Optional for stores written before it: none are named then. */
  listIgnored?(): Promise<MessageKey[]>;
  /**
   * Forgets what is past its bound (CLIENT_LIMITS): processed ids and handler marks older than
   * processed_ttl_ms, ignored marks older than ignored_ttl_ms or beyond the newest
   * max_ignored_marks. The client calls it after each queue_drained and every prune_interval_ms.
   * Optional: a store without it keeps everything.
   */
  prune?(now?: number): Promise<number>;
  /** The ledger (the Tally protocol §12), keyed by (from_user_id, id): append-only; a key already held changes nothing (false). */
  appendLedger(entry: LedgerEntry): Promise<boolean>;
  hasLedger(fromUserId: string, id: string): Promise<boolean>;
  listLedger(): Promise<LedgerEntry[]>;
  /**
   * The results of the handlers that returned on a message a later handler failed on, by handler
   * key (handlers.ts), so the next run skips them. Optional: without them the marks live in
   * memory (a restart then runs those handlers again).
   */
  getHandlerMarks?(fromUserId: string, id: string): Promise<Record<string, string | null> | undefined>;
  putHandlerMarks?(fromUserId: string, id: string, marks: Record<string, string | null>, at: number): Promise<void>;
  deleteHandlerMarks?(fromUserId: string, id: string): Promise<void>;
}

/** A minimal persistent key-value store (a file, IndexedDB, localStorage, SQLite ...). */
export interface KeyValue {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
  /** Keys that start with `prefix`. */
  keys(prefix: string): Promise<string[]>;
}

export class MapKeyValue implements KeyValue {
  private readonly map = new Map<string, string>();
  async get(key: string) {
    return this.map.get(key);
  }
  async set(key: string, value: string) {
    this.map.set(key, value);
  }
  async delete(key: string) {
    this.map.delete(key);
  }
  async keys(prefix: string) {
    return [...this.map.keys()].filter((k) => k.startsWith(prefix));
  }
}

/** localStorage (or any Storage) as a KeyValue, for browsers. */
export class WebStorageKeyValue implements KeyValue {
  constructor(
    private readonly storage: Storage,
    private readonly prefix = "tally:",
  ) {}
  async get(key: string) {
    return this.storage.getItem(this.prefix + key) ?? undefined;
  }
  async set(key: string, value: string) {
    this.storage.setItem(this.prefix + key, value);
  }
  async delete(key: string) {
    this.storage.removeItem(this.prefix + key);
  }
  async keys(prefix: string) {
    const out: string[] = [];
    for (let i = 0; i < this.storage.length; i++) {
      const k = this.storage.key(i);
      if (k?.startsWith(this.prefix + prefix)) out.push(k.slice(this.prefix.length));
    }
    return out;
  }
}

/**
 * The Tally store over a KeyValue. Processed ids are pruned by age: an id is kept for
 * `processedTtlMs` (default 90 days, three times the relay's 30-day queue lifetime, so no sender
 * that still retries through a relay can get a message processed twice).
 */
export class KeyValueTallyStore implements TallyStore {
  constructor(
    private readonly kv: KeyValue,
    private readonly processedTtlMs: number = CLIENT_LIMITS.processed_ttl_ms,
  ) {}

  async putOutbox(item: OutboxItem) {
    await this.kv.set(`outbox/${item.id}`, JSON.stringify(item));
  }
  async getOutbox(id: string) {
    const v = await this.kv.get(`outbox/${id}`);
    return v === undefined ? undefined : (JSON.parse(v) as OutboxItem);
  }
  async deleteOutbox(id: string) {
    await this.kv.delete(`outbox/${id}`);
  }
  async listOutbox() {
    const keys = await this.kv.keys("outbox/");
    const items: OutboxItem[] = [];
    for (const k of keys) {
      const v = await this.kv.get(k);
      if (v !== undefined) items.push(JSON.parse(v) as OutboxItem);
    }
    return items.sort((a, b) => a.created_at - b.created_at);
  }
  async hasProcessed(from: string, id: string) {
    return (await this.getProcessed(from, id)) !== undefined;
  }
  async getProcessed(from: string, id: string): Promise<ProcessedRecord | undefined> {
    const v = await this.kv.get(processedKey(from, id));
    const rec = v === undefined ? undefined : parseProcessed(v);
    if (rec && rec.at + this.processedTtlMs > Date.now()) return rec;
    const ignoredAt = await this.kv.get(ignoredKey(from, id));
    return ignoredAt === undefined ? undefined : { at: Number(ignoredAt), result: IGNORED_RESULT };
  }
  async addProcessed(from: string, id: string, at: number, result?: string) {
    // The ignored mark first: a crash between the two writes leaves it known as ignored.
    if (result === IGNORED_RESULT) await this.kv.set(ignoredKey(from, id), String(at));
    await this.kv.set(processedKey(from, id), result === undefined ? String(at) : JSON.stringify({ at, result }));
  }
  async listIgnored(): Promise<MessageKey[]> {
    return (await this.kv.keys("ignored/")).map((k) => {
      const [, from, id] = k.split("/");
      return { from_user_id: decodeURIComponent(from), id: decodeURIComponent(id) };
    });
  }
  async appendLedger(entry: LedgerEntry) {
    const key = ledgerStoreKey(entry.from_user_id, entry.id);
    if ((await this.kv.get(key)) !== undefined) return false;
    await this.kv.set(key, JSON.stringify(entry));
    // The time index (history.ts) after the entry: a crash between the two leaves an entry the
    // next index build (historyKeys) finds.
    if ((await this.kv.get(HISTORY_BUILT)) !== undefined) await this.kv.set(`history/${historyKey(entry)}`, key);
    return true;
  }
  /** The time index of the ledger (history.ts), built from the ledger the first time it is asked for. */
  async historyKeys(): Promise<string[]> {
    if ((await this.kv.get(HISTORY_BUILT)) === undefined) {
      for (const e of await this.listLedger()) await this.kv.set(`history/${historyKey(e)}`, ledgerStoreKey(e.from_user_id, e.id));
      await this.kv.set(HISTORY_BUILT, "1");
    }
    return (await this.kv.keys("history/")).map((k) => k.slice("history/".length));
  }
  async historyEntry(key: string): Promise<LedgerEntry | undefined> {
    const ledgerKey = await this.kv.get(`history/${key}`);
    const v = ledgerKey === undefined ? undefined : await this.kv.get(ledgerKey);
    return v === undefined ? undefined : (JSON.parse(v) as LedgerEntry);
  }
  async hasLedger(from: string, id: string) {
    return (await this.kv.get(ledgerStoreKey(from, id))) !== undefined;
  }
  async listLedger() {
    const out: LedgerEntry[] = [];
    for (const k of await this.kv.keys("ledger/")) {
      const v = await this.kv.get(k);
      if (v !== undefined) out.push(JSON.parse(v) as LedgerEntry);
    }
    return out;
  }
  async getHandlerMarks(from: string, id: string) {
    const v = await this.kv.get(marksKey(from, id));
    return v === undefined ? undefined : (JSON.parse(v) as { marks: Record<string, string | null> }).marks;
  }
  async putHandlerMarks(from: string, id: string, marks: Record<string, string | null>, at: number) {
    await this.kv.set(marksKey(from, id), JSON.stringify({ at, marks }));
  }
  async deleteHandlerMarks(from: string, id: string) {
    await this.kv.delete(marksKey(from, id));
  }
  /** Everything past its bound (TallyStore.prune); how many keys went. */
  async prune(now = Date.now()): Promise<number> {
    let n = await this.pruneProcessed(now);
    for (const k of await this.kv.keys("marks/")) {
      const v = await this.kv.get(k);
      if (v !== undefined && (JSON.parse(v) as { at: number }).at + this.processedTtlMs <= now) {
        await this.kv.delete(k);
        n++;
      }
    }
    const ignored: Array<[string, number]> = [];
    for (const k of await this.kv.keys("ignored/")) {
      const at = Number(await this.kv.get(k));
      if (Number.isFinite(at) && at + CLIENT_LIMITS.ignored_ttl_ms > now) ignored.push([k, at]);
      else {
        await this.kv.delete(k);
        n++;
      }
    }
    ignored.sort((a, b) => b[1] - a[1]);
    for (const [k] of ignored.slice(CLIENT_LIMITS.max_ignored_marks)) {
      await this.kv.delete(k);
      n++;
    }
    return n;
  }

  /** Drops processed ids older than the TTL; returns how many. */
  async pruneProcessed(now = Date.now()): Promise<number> {
    let n = 0;
    for (const k of await this.kv.keys("processed/")) {
      const v = await this.kv.get(k);
      if (v !== undefined && parseProcessed(v).at + this.processedTtlMs <= now) {
        await this.kv.delete(k);
        n++;
      }
    }
    return n;
  }
}

/** A processed record: the time alone (before results were kept, or while applying), or {at, result}. */
function parseProcessed(v: string): ProcessedRecord {
  if (v.startsWith("{")) return JSON.parse(v) as ProcessedRecord;
  return { at: Number(v) };
}

function ledgerStoreKey(from: string, id: string): string {
  return `ledger/${encodeURIComponent(from)}/${encodeURIComponent(id)}`;
}

function ignoredKey(from: string, id: string): string {
  return `ignored/${encodeURIComponent(from)}/${encodeURIComponent(id)}`;
}

function marksKey(from: string, id: string): string {
  return `marks/${encodeURIComponent(from)}/${encodeURIComponent(id)}`;
}

function processedKey(from: string, id: string): string {
  return `processed/${from}/${encodeURIComponent(id)}`;
}

/** A store that lives in memory only (tests, ephemeral clients): only when asked for (`store: "memory"`). */
export function memoryStore(): KeyValueTallyStore {
  return new KeyValueTallyStore(new MapKeyValue());
}
