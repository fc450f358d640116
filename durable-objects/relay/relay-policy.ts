// The operator's lists, one object per relay (named RELAY_POLICY_NAME): banned and allowed Tally
// keys, blocked client addresses, blocked mailbox topics. Written by the admin API
// (workers/admin-api.ts), read by the Worker through a short cache (workers/policy.ts). State only:
// what the lists mean is decided in the Worker.
import { MIGRATIONS } from "../../migrations/index";
import { ADMIN_LIMITS } from "../../shared/limits";
import { POLICY_LISTS, type PolicyEntry, type PolicyList, type PolicySnapshot } from "../../server/policy";
import { StoredObject } from "../base/stored-object";

export class RelayPolicy extends StoredObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, { migrations: MIGRATIONS.RelayPolicy });
  }

  /** RPC: adds (or re-reasons) an entry; false when the list is full. */
  async add(list: PolicyList, value: string, reason: string): Promise<boolean> {
    if (!POLICY_LISTS.includes(list)) return false;
    this.schema.ensure();
    const sql = this.sql;
    const n = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM entries WHERE list = ?", list).one().n;
    const exists = sql.exec("SELECT 1 FROM entries WHERE list = ? AND value = ?", list, value).toArray().length > 0;
    if (!exists && n >= ADMIN_LIMITS.max_list_entries) return false;
    sql.exec(
      "INSERT INTO entries (list, value, reason, added_at) VALUES (?, ?, ?, ?) ON CONFLICT (list, value) DO UPDATE SET reason = excluded.reason",
      list,
      value,
      reason,
      Date.now(),
    );
    return true;
  }

  /** RPC: removes an entry; whether there was one. */
  async remove(list: PolicyList, value: string): Promise<boolean> {
    if (!this.schema.exists) return false;
    const sql = this.sql;
    const had = sql.exec("SELECT 1 FROM entries WHERE list = ? AND value = ?", list, value).toArray().length > 0;
    if (had) sql.exec("DELETE FROM entries WHERE list = ? AND value = ?", list, value);
    return had;
  }

  /** RPC: every list with its entries, oldest first. */
  async snapshot(): Promise<PolicySnapshot> {
    const out = Object.fromEntries(POLICY_LISTS.map((l) => [l, [] as PolicyEntry[]])) as PolicySnapshot;
    if (!this.schema.exists) return out;
    for (const r of this.sql.exec<{ list: string; value: string; reason: string }>(
      "SELECT list, value, reason FROM entries ORDER BY added_at, value",
    )) {
      if ((POLICY_LISTS as readonly string[]).includes(r.list)) out[r.list as PolicyList].push({ value: r.value, reason: r.reason });
    }
    return out;
  }
}
