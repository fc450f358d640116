// What an account a Minca host carries for pays for (docs/hosting.md, "Who pays", "Quotas"): its
// `usage` rows per carried space and its own rows (its binding and its links, each charged the
// per-row overhead plus its bytes: rowBytes), checked against the account's quota and its lease of the
// host-wide total in one synchronous step, given back when not kept, and handed from account to
// account when one stops carrying a space others still carry (every stored byte is charged to
// exactly one carrying account).
import { MINCA_HOST_LIMITS, STORAGE_LIMITS } from "../../shared/limits";
import { StorageLease } from "../relay/storage-lease";
import type { Deferred } from "../base/deferred";
import { log } from "../../server/log";
import type { AccountStore } from "./account-store";
import { TOMBSTONE_KEYS } from "./account-meta";

/**
 * A reservation's answer: taken (`first`: the account's first versions in the space, so its
 * database is charged too: storage.database_bytes_space), or refused.
 */
export type Reserved = "ok" | "first" | "account_full" | "host_full";

export class AccountUsage {
  /** The account's share of the host-wide total (storage.host_bytes): what its usage rows add up to, leased from the relay's ledger. */
  readonly lease: StorageLease;

  constructor(
    private readonly store: AccountStore,
    env: Env,
    deferred: Deferred,
  ) {
    this.lease = new StorageLease(store.ctx, deferred, env, "host", store.schema, () => this.used());
  }

  private get sql(): SqlStorage {
    return this.store.sql;
  }

  /**
   * Charges `versions` and `bytes` written to `space` to this account when its carried spaces'
   * total bound leaves room for them, and the account's lease of the host-wide total
   * (storage.host_bytes, docs/hosting.md "Quotas") covers them: the checks and the write in one
   * step of the lease (lease.store), so concurrent requests never take the account or the host
   * past its bound. `account_full` or `host_full` when refused. With `relief` (revokes, deletions,
   * carry:closed), past the quota and the lease by at most relief_overdraft_bytes.
   */
  async reserve(space: string, versions: number, bytes: number, relief = false): Promise<Reserved> {
    const overdraft = relief ? MINCA_HOST_LIMITS.relief_overdraft_bytes : 0;
    const quota = MINCA_HOST_LIMITS.max_account_bytes + overdraft;
    if (!this.store.schema.exists) return bytes <= quota ? "ok" : "account_full"; // not carrying: nothing to count
    // The first versions this account pays for in the space charge the space's database too.
    const first = () => versions > 0 && !this.paysIn(space);
    const database = () => (first() ? STORAGE_LIMITS.database_bytes_space : 0);
    const r = await this.lease.store(bytes + database(), () => {
      const used = this.used();
      if (used + bytes + database() > quota) return { value: "account_full" as const };
      if (this.store.meta.get("carry_space") === null) return { value: "ok" as const }; // not carrying (closed meanwhile): nothing to count
      const taken = first() ? ("first" as const) : ("ok" as const);
      this.charge(space, versions, bytes);
      return { value: taken, held: this.used() };
    });
    if (r.stored) return r.value;
    // Revokes, deletions and carry:closed (docs/hosting.md, "Quotas"): the host's total has no
    // room, yet they are charged past the account's lease by at most the overdraft.
    if (relief && this.store.meta.get("carry_space") !== null && this.used() + bytes <= this.lease.bytes + overdraft) {
      log.warn("minca account: a revoke, deletion or carry:closed charged past its lease of the host's total (overdraft)", { bytes });
      this.charge(space, versions, bytes);
      return "ok";
    }
    return "host_full";
  }

  /**
   * Stores one of the account's own rows (its binding, a link) through its lease of the host-wide
   * total: `write` runs in the lease's one step, charged `bytes` more than the account held. False
   * (nothing written) when the total has no room: the caller answers storage_full.
   */
  async storeRow(bytes: number, write: () => void): Promise<boolean> {
    const r = await this.lease.store(bytes, () => {
      write();
      return { value: true, held: this.used() };
    });
    return r.stored;
  }

  /** Runs a delete of the account's own rows: what the lease no longer needs goes back soon. */
  freeRows(remove: () => void): void {
    this.lease.free(remove);
  }

  /** Gives back what reserve() charged for versions that were not kept. */
  refund(space: string, versions: number, bytes: number): void {
    if (!this.store.schema.exists) return;
    this.lease.free(() =>
      this.sql.exec("UPDATE usage SET versions = MAX(0, versions - ?), bytes = MAX(0, bytes - ?) WHERE space = ?", versions, bytes, space),
    );
  }

  /**
   * Another account stopped carrying `space`, which this account still carries: the bytes it was
   * charged for the space are charged here now (every stored byte to exactly one carrying
   * account). Taken over whatever the quota, and whatever the lease: the bytes are already
   * stored, so they are charged even when the host's total has no room left (logged).
   */
  async adopt(space: string, versions: number, bytes: number): Promise<boolean> {
    if (!this.store.schema.exists || this.store.meta.get("carry_space") === null) return false;
    const r = await this.lease.store(bytes, () => {
      this.charge(space, versions, bytes);
      return { value: true, held: this.used() };
    });
    if (!r.stored) {
      log.warn("minca account: took over bytes past its lease of the host's total (already stored)", { bytes });
      this.charge(space, versions, bytes);
    }
    return true;
  }

  /**
   * The account lost its carrier slot in `space` to a member proving the constitution's read key
   * (the profile's carrier slots): it no longer carries the space, and the bytes it was charged
   * for it go with it to the space, which hands them to an account that still carries it.
   */
  lostSlot(space: string): { versions: number; bytes: number } {
    if (!this.store.schema.exists) return { versions: 0, bytes: 0 };
    const usage = this.store.passes.usageOf(space);
    this.lease.free(() => this.store.ctx.storage.transactionSync(() => this.store.passes.delete(space)));
    return usage;
  }

  private charge(space: string, versions: number, bytes: number): void {
    this.sql.exec(
      `INSERT INTO usage (space, versions, bytes) VALUES (?, ?, ?)
       ON CONFLICT (space) DO UPDATE SET versions = versions + excluded.versions, bytes = bytes + excluded.bytes`,
      space,
      versions,
      bytes,
    );
  }

  /**
   * What the account holds as the host-wide total counts it: its carried spaces' bytes, the
   * database of each space it pays for versions in (storage.database_bytes_space), and its own rows.
   */
  used(): number {
    if (!this.store.schema.exists) return 0;
    const spaces = this.sql
      .exec<{ b: number }>(
        "SELECT COALESCE(SUM(bytes), 0) + ? * COALESCE(SUM(versions > 0), 0) AS b FROM usage",
        STORAGE_LIMITS.database_bytes_space,
      )
      .one().b;
    return spaces + this.rowsHeld();
  }

  /** Whether this account pays for versions in `space` (and so for its database). */
  private paysIn(space: string): boolean {
    return this.sql.exec("SELECT 1 FROM usage WHERE space = ? AND versions > 0", space).toArray().length > 0;
  }

  /**
   * The account's own rows: its binding (bindingBytes, kept in meta when it was charged), its links
   * (account-links.ts: each row, and the row the topic's mailbox keeps for each topic it links)
   * and what outlives carry:closed (tombstoneHeld). Passes, wakes and receivers charge nothing of
   * their own (account-passes.ts, account-wakes.ts, account-receivers.ts).
   */
  rowsHeld(): number {
    const binding = Number(this.store.meta.get("binding_bytes") ?? 0);
    return binding + this.store.links.held(this.store.account()) + this.tombstoneHeld();
  }

  /**
   * What outlives carry:closed (docs/hosting.md, "The tombstone"): the account's revoked keys
   * (account-revokes.ts) and the tombstone's meta rows. Charged while the account is carried too
   * (a revoke outlives its record), and after carry:closed the account's lease keeps exactly these.
   */
  tombstoneHeld(): number {
    return this.store.revokes.held() + this.store.meta.heldBytes(TOMBSTONE_KEYS);
  }
}
