// The in-memory storage adapter: a database of two Maps, which outlives the stores opened on it
// (open another store over the same Maps to "reopen" it) but not the process. For tests, demos,
// and as the shape of an app's own adapter.
import type { RecordRow, StorageAdapter } from "./adapter";

export class MemoryAdapter implements StorageAdapter {
  constructor(
    /** The records by `${collection}\0${key}`. */
    readonly records = new Map<string, RecordRow>(),
    readonly meta = new Map<string, Uint8Array>(),
  ) {}

  loadAll(): Iterable<RecordRow> {
    return [...this.records.values()];
  }

  save(row: RecordRow): void {
    const id = `${row.collection}\0${row.key}`;
    const stored = this.records.get(id);
    if (!stored || row.hlc > stored.hlc) this.records.set(id, row);
  }

  /** Synchronous, so the store over it keeps only its index and reads values here. */
  loadSync(collection: string, key: string): RecordRow | undefined {
    return this.records.get(`${collection}\0${key}`);
  }

  loadMeta(name: string): Uint8Array | undefined {
    return this.meta.get(name);
  }

  saveMeta(name: string, value: Uint8Array): void {
    this.meta.set(name, value);
  }

  close(): void {}

  destroy(): void {
    this.records.clear();
    this.meta.clear();
  }
}
