// Who carries one space a Minca host carries (docs/hosting.md, "Carried spaces", "Carrier slots",
// "Who pays"): the space's carriers table, the read keys their passes prove, the slots, and the
// hand-over of an account's bytes to another carrier when it stops carrying the space. MincaSpace
// (minca-space.ts) keeps the log and calls this once its schema exists.
import type { Meta } from "../base/meta";
import { slotFor } from "../../server/minca/carrier-slots";
import type { Constitution } from "../../shared/minca/space";
import { accountOf } from "./peers";

/** What the carriers reach of their space. */
interface CarriedSpace {
  id(): string;
  constitution(): Constitution | null;
  /** Deletes every row the space holds (its last carrier went). */
  forget(): void;
}

export class SpaceCarriers {
  private readonly sql: SqlStorage;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    private readonly meta: Meta,
    private readonly space: CarriedSpace,
  ) {
    this.sql = ctx.storage.sql;
  }

  /**
   * `account` carries this space under its current pass, proving `readKey` (private spaces), the
   * space one of the account's own when `own`. The account decides which of its passes is current;
   * no account's pass displaces another's. Carrier slots (the profile's "Carried spaces"): past
   * max_carriers_per_space, a pass proven with the constitution's own read key takes the slot of
   * the most recently added carrier that is not (which hears it has lost it, and whose bytes here
   * move to another carrier); such a pass is never refused a slot. False (nothing kept) for any
   * other pass when the slots are full.
   */
  async carry(account: string, constitution: Constitution, readKey: string | null, at: number, own = false): Promise<boolean> {
    const taken = this.ctx.storage.transactionSync((): { ok: boolean; evicted: string | null } => {
      const held = this.sql
        .exec<{ account: string; read_key: string | null; added: number }>("SELECT account, read_key, added FROM carriers")
        .toArray();
      const slot = slotFor(
        held.map((c) => ({ account: c.account, readKey: c.read_key, added: c.added })),
        account,
        readKey,
        this.space.constitution() ?? constitution,
      );
      if (!slot.ok) return { ok: false, evicted: null };
      if (slot.evict !== null) this.sql.exec("DELETE FROM carriers WHERE account = ?", slot.evict);
      const evicted = slot.evict;
      this.meta.set("space", this.space.id());
      if (this.meta.get("constitution") === null) this.meta.set("constitution", JSON.stringify(constitution));
      this.sql.exec(
        `INSERT INTO carriers (account, at, read_key, own, added) VALUES (?, ?, ?, ?, (SELECT COALESCE(MAX(added), 0) + 1 FROM carriers))
         ON CONFLICT (account) DO UPDATE SET at = excluded.at, read_key = excluded.read_key, own = excluded.own`,
        account,
        at,
        readKey,
        own ? 1 : 0,
      );
      return { ok: true, evicted };
    });
    if (taken.evicted !== null) {
      const usage = await accountOf(this.env, taken.evicted).lostSlot(this.space.id());
      await this.handOver(usage, [taken.evicted, account]);
    }
    return taken.ok;
  }

  /**
   * `account` no longer carries this space; `usage` is what it was charged for the space. With
   * other carriers left, the bytes move to one of them (every stored byte is charged to exactly
   * one carrying account); with none, the space is forgotten — unless `keepLast` (a revoke never
   * drops a log): then the account keeps carrying it, "kept".
   */
  async uncarry(account: string, usage: { versions: number; bytes: number }, opts: { keepLast: boolean }): Promise<"kept" | "gone"> {
    const others = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM carriers WHERE account != ?", account).one().n;
    if (others === 0 && this.meta.get("carry_of") === null) {
      if (opts.keepLast) return "kept";
      this.space.forget();
      return "gone";
    }
    this.sql.exec("DELETE FROM carriers WHERE account = ?", account);
    await this.handOver(usage, [account]);
    return "gone";
  }

  /** Charges `usage` to the longest-standing carrier not in `besides` that takes it. */
  private async handOver(usage: { versions: number; bytes: number }, besides: string[]): Promise<void> {
    if (usage.versions === 0 && usage.bytes === 0) return;
    const heirs = this.sql
      .exec<{ account: string }>(
        "SELECT account FROM carriers WHERE account NOT IN (SELECT value FROM json_each(?)) ORDER BY added, rowid",
        JSON.stringify(besides),
      )
      .toArray();
    for (const { account } of heirs) if (await accountOf(this.env, account).adopt(this.space.id(), usage.versions, usage.bytes)) return;
  }

  /**
   * Who may read (the profile's pass rule): a carry space's own read key; else the read key of
   * every carrying account's current pass. A proof under any of them reads: no account's pass
   * displaces another's, and no field a writer chooses (such as `at`) decides between accounts.
   */
  readKeys(constitution: Constitution): string[] {
    if (this.meta.get("carry_of") !== null) return [constitution.readKey!];
    const keys = this.sql
      .exec<{ k: string }>("SELECT DISTINCT COALESCE(read_key, ?) AS k FROM carriers", constitution.readKey ?? "")
      .toArray();
    return keys.map((r) => r.k).filter((k) => k !== "");
  }

  list(): Array<{ account: string; own: boolean }> {
    return this.sql
      .exec<{ account: string; own: number }>("SELECT account, own FROM carriers ORDER BY account")
      .toArray()
      .map((r) => ({ account: r.account, own: r.own === 1 }));
  }
}
