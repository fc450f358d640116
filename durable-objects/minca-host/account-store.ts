// What one MincaAccount object keeps, as the modules that work on it reach it: its SQLite tables
// (made on the first write that keeps something), its `meta` key/value table (the base's, with the
// account's keys: account-meta.ts), and a module per table that owns its SQL and what its rows are
// charged (account-links.ts, account-revokes.ts, account-passes.ts, account-wakes.ts,
// account-receivers.ts). The account object, its carry-record keeper (account-records.ts), its
// usage (account-usage.ts) and its push sender (account-pushes.ts) share one of these.
import type { LazySchema } from "../base/schema";
import { Meta } from "../base/meta";
import type { AccountMetaKey } from "./account-meta";
import { AccountLinks } from "./account-links";
import { AccountRevokes } from "./account-revokes";
import { AccountPasses } from "./account-passes";
import { AccountWakes } from "./account-wakes";
import { AccountReceivers } from "./account-receivers";

export class AccountStore {
  readonly sql: SqlStorage;
  /** The account's `meta` table (the same table as the object's own `meta`; a Meta holds no state). */
  readonly meta: Meta<AccountMetaKey>;
  readonly links: AccountLinks;
  readonly revokes: AccountRevokes;
  readonly passes: AccountPasses;
  readonly wakes: AccountWakes;
  readonly receivers: AccountReceivers;

  constructor(
    readonly ctx: DurableObjectState,
    readonly schema: LazySchema,
    /** The account's did (the object's name). */
    readonly account: () => string,
  ) {
    this.sql = ctx.storage.sql;
    this.meta = new Meta(schema);
    this.links = new AccountLinks(this.sql);
    this.revokes = new AccountRevokes(this.sql);
    this.passes = new AccountPasses(this.sql);
    this.wakes = new AccountWakes(this.sql);
    this.receivers = new AccountReceivers(this.sql);
  }

  count(table: string): number {
    if (!this.schema.exists) return 0;
    return this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).one().n;
  }
}
