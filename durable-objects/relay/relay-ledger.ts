// The relay's storage ledger (docs/hostile.md, "Nothing is stored for free"; docs/hostile.md,
// "Relay-wide totals"): one RelayLedger object per relay holds, per stored kind (Tally queues,
// mailboxes, hosted accounts), the bytes leased to each object that stores, and grants a lease
// only while the kind's total (STORAGE_*_BYTES) has room. Objects ask for a lease only when what
// they hold outgrows the one they have (storage-lease.ts), so no message waits on this object
// but the one that crosses a lease, and a request that stores nothing never reaches it: its
// schema is made by the first lease. Its figures reach the status page through the stats object.
// Its alarm audits leases that have not changed for a day (storage.lease_audit_age_seconds): it
// asks each holder what it recorded and takes back what the holder does not hold, so a grant
// whose holder ended before recording it, or a give-back that never arrived, is not lost for good.
import { StoredObject } from "../base/stored-object";
import { Debounced } from "../base/debounced";
import { relayStats } from "./relay-stats";
import { MIGRATIONS } from "../../migrations/index";
import { STATS_LIMITS, STORAGE_LIMITS } from "../../shared/limits";
import { grantLease, STORAGE_KINDS, storageTotals, type StorageKind, type StorageTotals } from "../../shared/storage";
import type { StorageReport } from "../../shared/stats";
import { log } from "../../shared/log";

export { RELAY_LEDGER_NAME, relayLedger } from "../../server/relay-objects";

/** How long after a full batch of the audit (storage.lease_audit_batch) the next one runs, ms. */
const AUDIT_NEXT_BATCH_MS = 1_000;

export class RelayLedger extends StoredObject<Env> {
  /** Each kind's total in force (the settings). */
  protected totals: StorageTotals;
  /** Sends the figures to the stats object, at most every flush interval. */
  private readonly reportLater: Debounced;
  /** Whether this instance made sure the audit's alarm is set (once per instance, after its first change). */
  private auditArmed = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, { migrations: MIGRATIONS.RelayLedger });
    this.reportLater = new Debounced(ctx, STATS_LIMITS.flush_interval_ms, () => this.flushStats());
    const { invalid, ...totals } = storageTotals(env);
    if (invalid.length > 0)
      log.warn("storage: settings that are not byte counts were ignored (their defaults hold)", { settings: invalid });
    this.totals = totals;
  }

  /**
   * RPC: `holder` must hold `need` bytes of `kind` (and would like `want`). Its lease becomes
   * `want`, or as much as the total leaves when that covers `need`; refused (its lease unchanged)
   * when the total has no room for `need`. Absolute amounts, so asking twice changes nothing more.
   */
  async claim(kind: StorageKind, holder: string, need: number, want: number): Promise<{ ok: boolean; granted: number }> {
    if (!isKind(kind) || !(need >= 0) || !(want >= need)) return { ok: false, granted: 0 };
    const held = this.held(kind, holder);
    if (need <= held) return { ok: true, granted: held };
    const sum = this.sum(kind);
    const granted = grantLease(sum - held, this.totals[kind], need, want);
    if (granted === null) return { ok: false, granted: held };
    this.set(kind, holder, held, granted);
    return { ok: true, granted };
  }

  /** RPC: `holder` gives back what it holds of `kind` beyond `keep` bytes (0: all of it). Its new lease. */
  async release(kind: StorageKind, holder: string, keep: number): Promise<number> {
    if (!isKind(kind) || !(keep >= 0)) return 0;
    const held = this.held(kind, holder);
    if (keep >= held) return held;
    this.set(kind, holder, held, keep);
    return keep;
  }

  /** RPC, the admin API: per kind, the `limit` objects holding the largest leases (opaque ids, bytes), largest first. */
  async largest(limit: number): Promise<Record<StorageKind, Array<{ holder: string; bytes: number }>>> {
    const n = Math.max(1, Math.min(100, Math.floor(limit) || 10));
    const out = {} as Record<StorageKind, Array<{ holder: string; bytes: number }>>;
    for (const kind of STORAGE_KINDS) {
      out[kind] = !this.schema.exists
        ? []
        : this.sql
            .exec<{ holder: string; bytes: number }>("SELECT holder, bytes FROM leases WHERE kind = ? ORDER BY bytes DESC LIMIT ?", kind, n)
            .toArray()
            .map((r) => ({ holder: r.holder, bytes: r.bytes }));
    }
    return out;
  }

  /** RPC: per kind, the bytes leased across the relay, the objects holding them, and the total. */
  async snapshot(): Promise<StorageReport> {
    return this.report();
  }

  /**
   * The audit: each lease unchanged for lease_audit_age_seconds (oldest first, a batch at a time)
   * is checked with its holder. What the holder recorded is what it can give back; the ledger's
   * lease goes down to it when it counts more. A lease that changed while its holder was asked is
   * left (a claim in flight: the holder records it next). The ledger never lowers a lease below
   * what its holder recorded, so the total is never counted too low.
   */
  protected async onAlarm(now: number): Promise<number | null> {
    if (!this.schema.exists) return null;
    const due = this.sql
      .exec<{ kind: string; holder: string; bytes: number; updated_at: number }>(
        "SELECT kind, holder, bytes, updated_at FROM leases WHERE updated_at <= ? ORDER BY updated_at LIMIT ?",
        now - STORAGE_LIMITS.lease_audit_age_seconds * 1000,
        STORAGE_LIMITS.lease_audit_batch,
      )
      .toArray();
    let taken = 0;
    for (const row of due) {
      if (!isKind(row.kind)) continue;
      let recorded: number;
      try {
        recorded = await leaseHolder(this.env, row.kind, row.holder).leaseHeld();
      } catch (err) {
        log.warn("storage: a lease's holder could not be asked; asked again at the next audit", { kind: row.kind, err });
        this.touch(row.kind, row.holder, row.updated_at);
        continue;
      }
      const held = this.sql
        .exec<{ bytes: number; updated_at: number }>(
          "SELECT bytes, updated_at FROM leases WHERE kind = ? AND holder = ?",
          row.kind,
          row.holder,
        )
        .toArray()[0];
      if (!held || held.updated_at !== row.updated_at) continue; // changed meanwhile: not stale
      if (recorded >= 0 && recorded < held.bytes) {
        this.set(row.kind, row.holder, held.bytes, recorded);
        taken += held.bytes - recorded;
      } else this.touch(row.kind, row.holder, row.updated_at);
    }
    if (taken > 0) log.info("storage: the audit took back leases their holders did not record", { bytes: taken });
    return due.length === STORAGE_LIMITS.lease_audit_batch ? Date.now() + AUDIT_NEXT_BATCH_MS : this.nextAudit();
  }

  /** Sends the figures to the stats object now (the timer calls it; tests may too). */
  async flushStats(): Promise<void> {
    try {
      await relayStats(this.env).storage(this.report());
    } catch (err) {
      log.warn("storage: ledger report failed; sent with the next change", { err });
    }
  }

  private report(): StorageReport {
    const rows = this.schema.exists
      ? this.sql.exec<{ kind: string; bytes: number; holders: number }>("SELECT kind, bytes, holders FROM totals").toArray()
      : [];
    const out = {} as StorageReport;
    for (const kind of STORAGE_KINDS) {
      const r = rows.find((x) => x.kind === kind);
      out[kind] = { reserved_bytes: r?.bytes ?? 0, holders: r?.holders ?? 0, total_bytes: this.totals[kind] };
    }
    return out;
  }

  /** A lease checked and found right: its clock starts again (only when nothing changed it meanwhile). */
  private touch(kind: StorageKind, holder: string, was: number): void {
    this.sql.exec("UPDATE leases SET updated_at = ? WHERE kind = ? AND holder = ? AND updated_at = ?", Date.now(), kind, holder, was);
  }

  /** When the oldest lease comes of audit age; null while no lease is held. */
  private nextAudit(): number | null {
    const oldest = this.sql.exec<{ t: number | null }>("SELECT MIN(updated_at) AS t FROM leases").one().t;
    return oldest === null ? null : oldest + STORAGE_LIMITS.lease_audit_age_seconds * 1000;
  }

  private held(kind: StorageKind, holder: string): number {
    if (!this.schema.exists) return 0;
    return (
      this.sql.exec<{ bytes: number }>("SELECT bytes FROM leases WHERE kind = ? AND holder = ?", kind, holder).toArray()[0]?.bytes ?? 0
    );
  }

  private sum(kind: StorageKind): number {
    if (!this.schema.exists) return 0;
    return this.sql.exec<{ bytes: number }>("SELECT bytes FROM totals WHERE kind = ?", kind).toArray()[0]?.bytes ?? 0;
  }

  /** The holder's lease goes from `held` to `bytes`, and the kind's sum with it, in one step. */
  private set(kind: StorageKind, holder: string, held: number, bytes: number): void {
    this.schema.ensure();
    this.ctx.storage.transactionSync(() => {
      const holders = (held > 0 ? -1 : 0) + (bytes > 0 ? 1 : 0);
      if (bytes > 0) {
        this.sql.exec(
          "INSERT INTO leases (kind, holder, bytes, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (kind, holder) DO UPDATE SET bytes = excluded.bytes, updated_at = excluded.updated_at",
          kind,
          holder,
          bytes,
          Date.now(),
        );
      } else {
        this.sql.exec("DELETE FROM leases WHERE kind = ? AND holder = ?", kind, holder);
      }
      this.sql.exec(
        `INSERT INTO totals (kind, bytes, holders) VALUES (?, ?, ?)
         ON CONFLICT (kind) DO UPDATE SET bytes = bytes + excluded.bytes, holders = holders + excluded.holders`,
        kind,
        bytes - held,
        holders,
      );
    });
    if (!this.auditArmed) {
      this.auditArmed = true;
      const at = this.nextAudit();
      if (at !== null) this.ctx.waitUntil(this.wakeAt(at));
    }
    this.reportLater.schedule();
  }
}

function isKind(k: string): k is StorageKind {
  return (STORAGE_KINDS as readonly string[]).includes(k);
}

/** What the ledger asks a lease's holder (TallyUser, MincaMailbox, MincaAccount). */
interface LeaseHolder {
  leaseHeld(): number;
}

/** The object holding a lease of `kind`, from its id (the ledger's `holder`). */
function leaseHolder(env: Env, kind: StorageKind, holder: string): { leaseHeld(): Promise<number> } {
  const ns = { tally: env.TALLY_USER, mailbox: env.MINCA_MAILBOX, host: env.MINCA_ACCOUNT }[kind] as unknown as DurableObjectNamespace<
    LeaseHolder & Rpc.DurableObjectBranded
  >;
  return ns.get(ns.idFromString(holder)) as unknown as { leaseHeld(): Promise<number> };
}
