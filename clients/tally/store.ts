// What a Tally client keeps across restarts (seed 003 sections 7 and 8.2): the outbox of
// unacknowledged messages and the set of processed message ids. One small interface, with an
// in-memory implementation and one over any key-value store that persists.
import type { PeerEnvelope } from "../../shared/tally/envelope";
import type { LedgerEntry } from "../../shared/tally/ledger";

export interface OutboxItem {
  id: string;
  to_user_id: string;
  /** The sealed envelope, made once: every retry sends the same bytes, the same id and proof. */
  envelope: PeerEnvelope;
  created_at: number;
  attempts: number;
  last_attempt_at: number;
}

export interface TallyStore {
  putOutbox(item: OutboxItem): Promise<void>;
  getOutbox(id: string): Promise<OutboxItem | undefined>;
  deleteOutbox(id: string): Promise<void>;
  listOutbox(): Promise<OutboxItem[]>;
  /** Whether (from_user_id, id) was processed already. */
  hasProcessed(fromUserId: string, id: string): Promise<boolean>;
  addProcessed(fromUserId: string, id: string, at: number): Promise<void>;
  /** The ledger (seed 12): append-only; appending an id already held changes nothing (false). */
  appendLedger(entry: LedgerEntry): Promise<boolean>;
  hasLedger(id: string): Promise<boolean>;
  listLedger(): Promise<LedgerEntry[]>;
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
    private readonly processedTtlMs = 90 * 86_400_000,
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
    const v = await this.kv.get(processedKey(from, id));
    return v !== undefined && Number(v) + this.processedTtlMs > Date.now();
  }
  async addProcessed(from: string, id: string, at: number) {
    await this.kv.set(processedKey(from, id), String(at));
  }
  async appendLedger(entry: LedgerEntry) {
    const key = `ledger/${encodeURIComponent(entry.id)}`;
    if ((await this.kv.get(key)) !== undefined) return false;
    await this.kv.set(key, JSON.stringify(entry));
    return true;
  }
  async hasLedger(id: string) {
    return (await this.kv.get(`ledger/${encodeURIComponent(id)}`)) !== undefined;
  }
  async listLedger() {
    const out: LedgerEntry[] = [];
    for (const k of await this.kv.keys("ledger/")) {
      const v = await this.kv.get(k);
      if (v !== undefined) out.push(JSON.parse(v) as LedgerEntry);
    }
    return out;
  }
  /** Drops processed ids older than the TTL; returns how many. */
  async pruneProcessed(now = Date.now()): Promise<number> {
    let n = 0;
    for (const k of await this.kv.keys("processed/")) {
      const v = await this.kv.get(k);
      if (v !== undefined && Number(v) + this.processedTtlMs <= now) {
        await this.kv.delete(k);
        n++;
      }
    }
    return n;
  }
}

function processedKey(from: string, id: string): string {
  return `processed/${from}/${encodeURIComponent(id)}`;
}

/** A store that lives in memory only (tests, ephemeral clients). */
export function memoryStore(): KeyValueTallyStore {
  return new KeyValueTallyStore(new MapKeyValue());
}
