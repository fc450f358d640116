// What one MincaAccount object keeps, as the modules that work on it reach it: its SQLite tables
// (made on the first write that keeps something), the `meta` key/value table,
// and row counts. The account object, its carry-record keeper (account-records.ts) and its push
// sender (account-pushes.ts) share one of these.
import type { LazySchema } from "../base/schema";

export class AccountStore {
  readonly sql: SqlStorage;

  constructor(
    readonly ctx: DurableObjectState,
    readonly schema: LazySchema,
    /** The account's did (the object's name). */
    readonly account: () => string,
  ) {
    this.sql = ctx.storage.sql;
  }

  meta(key: string): string | null {
    if (!this.schema.exists) return null;
    return this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0]?.value ?? null;
  }

  setMeta(key: string, value: string): void {
    this.schema.ensure();
    this.sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value);
  }

  count(table: string): number {
    if (!this.schema.exists) return 0;
    return this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).one().n;
  }
}
