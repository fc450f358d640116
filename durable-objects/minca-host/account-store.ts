// What one MincaAccount object keeps, as the modules that work on it reach it: its SQLite tables
// (made on the first write that keeps something), its `meta` key/value table (the base's, with the
// account's keys: account-meta.ts), and row counts. The account object, its carry-record keeper
// (account-records.ts) and its push sender (account-pushes.ts) share one of these.
import type { LazySchema } from "../base/schema";
import { Meta } from "../base/meta";
import type { AccountMetaKey } from "./account-meta";

export class AccountStore {
  readonly sql: SqlStorage;
  /** The account's `meta` table (the same table as the object's own `meta`; a Meta holds no state). */
  readonly meta: Meta<AccountMetaKey>;

  constructor(
    readonly ctx: DurableObjectState,
    readonly schema: LazySchema,
    /** The account's did (the object's name). */
    readonly account: () => string,
  ) {
    this.sql = ctx.storage.sql;
    this.meta = new Meta(schema);
  }

  count(table: string): number {
    if (!this.schema.exists) return 0;
    return this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).one().n;
  }
}
