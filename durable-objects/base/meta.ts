// An object's `meta` table (every class's migrations make it, with the same two columns): a few named values (its lease, a tombstone, the name an object written
// before the runtime told names kept). Reading stores nothing; writing makes the schema
// (schema.ts), so a value set is kept with the write that needs it.
import type { LazySchema } from "./schema";

export class Meta {
  constructor(private readonly schema: LazySchema) {}

  /** The value of `key`, or null (always null for an object that never kept anything). */
  get(key: string): string | null {
    if (!this.schema.exists) return null;
    return this.schema.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0]?.value ?? null;
  }

  /** Sets `key` (makes the schema first). */
  set(key: string, value: string): void {
    this.schema.ensure();
    this.schema.sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value);
  }

  delete(key: string): void {
    if (!this.schema.exists) return;
    this.schema.sql.exec("DELETE FROM meta WHERE key = ?", key);
  }
}
