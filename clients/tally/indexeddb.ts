// A KeyValue over IndexedDB, the Tally client's default store in browsers (the Tally protocol sections 1,
// 7, 8.2: the outbox, the ledger and the processed set persist). One database per name, one
// object store of string keys and values.
import type { KeyValue } from "./store";

const STORE = "kv";

function request<T>(r: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

export class IndexedDbKeyValue implements KeyValue {
  private db: Promise<IDBDatabase> | undefined;

  constructor(
    private readonly name: string,
    private readonly idb: IDBFactory = globalThis.indexedDB,
  ) {}

  private open(): Promise<IDBDatabase> {
    this.db ??= new Promise((resolve, reject) => {
      const r = this.idb.open(this.name, 1);
      r.onupgradeneeded = () => r.result.createObjectStore(STORE);
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error);
    });
    return this.db;
  }

  private async tx<T>(mode: IDBTransactionMode, fn: (s: IDBObjectStore) => IDBRequest<T>): Promise<T> {
    const db = await this.open();
    const t = db.transaction(STORE, mode);
    const result = request(fn(t.objectStore(STORE)));
    await new Promise<void>((resolve, reject) => {
      t.oncomplete = () => resolve();
      t.onerror = () => reject(t.error);
      t.onabort = () => reject(t.error);
    });
    return result;
  }

  async get(key: string) {
    const v = await this.tx("readonly", (s) => s.get(key) as IDBRequest<string | undefined>);
    return typeof v === "string" ? v : undefined;
  }
  async set(key: string, value: string) {
    await this.tx("readwrite", (s) => s.put(value, key));
  }
  async delete(key: string) {
    await this.tx("readwrite", (s) => s.delete(key));
  }
  async keys(prefix: string) {
    const range = IDBKeyRange.bound(prefix, prefix + "\uffff");
    return (await this.tx("readonly", (s) => s.getAllKeys(range))).map(String);
  }
}
