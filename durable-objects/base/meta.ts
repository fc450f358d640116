// An object's `meta` table (every class's migrations make it, with the same two columns): a few
// named values. Each class names its keys (a string union, e.g. minca-host/account-meta.ts), so a
// mistyped key is a type error; the base's own keys (BaseMetaKey: the lease, the name) are valid in
// every class. Reading stores nothing; writing makes the schema (schema.ts), so a value set is kept
// with the write that needs it. No other module reads or writes `meta` with its own SQL.
import { rowBytes } from "../../shared/storage";
import type { LazySchema } from "./schema";

/** The key an object's storage lease is kept under (storage-lease.ts): it outlives clear(). */
export const LEASE_META_KEY = "lease_bytes";
/** The keys the base keeps in every object's meta: its lease, and its name (StoredObject). */
type BaseMetaKey = typeof LEASE_META_KEY | "name";

export class Meta<K extends string = string> {
  constructor(private readonly schema: LazySchema) {}

  /** The value of `key`, or null (always null for an object that never kept anything). */
  get(key: K | BaseMetaKey): string | null {
    if (!this.schema.exists) return null;
    return this.schema.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0]?.value ?? null;
  }

  /** Sets `key` (makes the schema first). */
  set(key: K | BaseMetaKey, value: string): void {
    this.schema.ensure();
    this.schema.sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value);
  }

  /** Deletes each of `keys`. */
  delete(...keys: Array<K | BaseMetaKey>): void {
    if (!this.schema.exists || keys.length === 0) return;
    this.schema.sql.exec("DELETE FROM meta WHERE key IN (SELECT value FROM json_each(?))", JSON.stringify(keys));
  }

  /** Deletes every key but `keep` and the lease's (what the object still holds stays leased). */
  clear(keep: readonly K[] = []): void {
    if (!this.schema.exists) return;
    this.schema.sql.exec(
      "DELETE FROM meta WHERE key != ? AND key NOT IN (SELECT value FROM json_each(?))",
      LEASE_META_KEY,
      JSON.stringify(keep),
    );
  }

  /** What the rows of `keys` charge a storage total: per row the overhead (rowBytes) plus its value's length. */
  heldBytes(keys: readonly K[]): number {
    if (!this.schema.exists) return 0;
    return this.schema.sql
      .exec<{ b: number }>(
        "SELECT TOTAL(length(value)) + COUNT(*) * ? AS b FROM meta WHERE key IN (SELECT value FROM json_each(?))",
        rowBytes(),
        JSON.stringify(keys),
      )
      .one().b;
  }
}
