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
import { relayStats } from "./relay-stats";
import { MIGRATIONS } from "../../migrations/index";
import { STORAGE_LIMITS } from "../../shared/limits";
import { grantLease, STORAGE_KINDS, type StorageKind, type StorageTotals } from "../../shared/storage";
import type { StorageReport } from "../../server/stats";
import { log } from "../../server/log";

export { RELAY_LEDGER_NAME, relayLedger } from "../../server/relay-objects";

/** How long after a full batch of the audit (storage.lease_audit_batch) the next one runs, ms. */
const AUDIT_NEXT_BATCH_MS = 1_000;

export class RelayLedger extends StoredObject<Env> {
  /** Each kind's total in force (the settings). */
  protected totals: StorageTotals;
  /** Sends the figures to the stats object, at most every flush interval (from the alarm: base/deferred.ts; read from storage, so none is lost to an eviction). */
  private readonly reportLater = this.deferred.part(() => this.flushStats());
  /** Whether this instance made sure the audit's alarm is set (once per instance, after its first change). */
  private auditArmed = false;
  /** How often each lease changed in this instance: a reclaim applies only to a lease unchanged while its holder was asked. */
  private readonly versions = new Map<string, number>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, { migrations: MIGRATIONS.RelayLedger });
    this.totals = this.settings.storage;
  }

  /**
   * RPC: `holder` must hold `need` bytes of `kind` (and would like `want`). Its lease becomes
   * `want`, or as much as the total leaves when that covers `need`; refused (its lease unchanged)
   * when what is *held* across the relay leaves no room for `need`. When only the slack lent to
   * other holders stands in the way, the ledger takes it back from them first (reclaim()), so
   * slack never makes the total unreachable for names that hold data. `held` is what the holder
   * holds once it stores (`need` unless it asks ahead of need). Absolute amounts, so asking twice
   * changes nothing more.
   */
  async claim(kind: StorageKind, holder: string, need: number, want: number, held = need): Promise<{ ok: boolean; granted: number }> {
    if (!isKind(kind) || !(need >= 0) || !(want >= need)) return { ok: false, granted: 0 };
    held = Math.min(need, Math.max(0, held));
    for (let round = 0; ; round++) {
      // Read afresh each round: other claims run while a reclaim awaits its holders.
      const mine = this.lease(kind, holder);
      if (need <= mine.bytes) {
        if (held !== mine.held) this.set(kind, holder, mine, mine.bytes, held);
        return { ok: true, granted: mine.bytes };
      }
      const sum = this.sum(kind);
      const granted = grantLease(sum.bytes - mine.bytes, this.totals[kind], need, want);
      if (granted !== null) {
        this.set(kind, holder, mine, granted, held);
        return { ok: true, granted };
      }
      // What is held leaves no room either: the total is reached.
      if (need > this.totals[kind] - (sum.held - mine.held)) return { ok: false, granted: mine.bytes };
      // Slack is taken back only for bytes about to be held, never for a claim ahead of need.
      const short = need - (this.totals[kind] - (sum.bytes - mine.bytes));
      if (held < need || round >= STORAGE_LIMITS.lease_reclaim_rounds || (await this.reclaim(kind, holder, short)) === 0)
        return { ok: false, granted: mine.bytes };
    }
  }

  /**
   * RPC: `holder` gives back what it holds of `kind` beyond `keep` bytes (0: all of it), and says
   * it holds `held` of them (at most `keep`). Its new lease.
   */
  async release(kind: StorageKind, holder: string, keep: number, held = keep): Promise<number> {
    if (!isKind(kind) || !(keep >= 0)) return 0;
    const mine = this.lease(kind, holder);
    if (keep >= mine.bytes) return mine.bytes;
    this.set(kind, holder, mine, keep, Math.min(keep, Math.max(0, held)));
    return keep;
  }

  /**
   * Takes back at least `short` bytes of slack (leased beyond what is held) of `kind` from other
   * holders than `claimer`, those lending the most first, a batch at a time: each is asked to
   * keep only what it holds (leaseReclaim(); a holder with a claim of its own in flight declines).
   * A lease that changed while its holder was asked is left as it is. Answers the bytes taken back.
   */
  private async reclaim(kind: StorageKind, claimer: string, short: number): Promise<number> {
    const lenders = this.sql
      .exec<{ holder: string }>(
        "SELECT holder FROM leases WHERE kind = ? AND holder != ? AND bytes > held ORDER BY bytes - held DESC LIMIT ?",
        kind,
        claimer,
        STORAGE_LIMITS.lease_reclaim_batch,
      )
      .toArray();
    let taken = 0;
    for (const { holder } of lenders) {
      if (taken >= short) break;
      const version = this.versions.get(key(kind, holder)) ?? 0;
      let kept: number | null;
      try {
        kept = await leaseHolder(this.env, kind, holder).leaseReclaim();
      } catch (err) {
        log.warn("storage: a lease's slack could not be taken back", { kind, err });
        continue;
      }
      if (kept === null || !(kept >= 0) || (this.versions.get(key(kind, holder)) ?? 0) !== version) continue;
      const now = this.lease(kind, holder);
      if (kept >= now.bytes) continue;
      this.set(kind, holder, now, kept, kept);
      taken += now.bytes - kept;
    }
    if (taken > 0) log.info("storage: slack taken back from holders for a claim", { kind, bytes: taken });
    return taken;
  }

  /**
   * RPC, the admin API: per kind, the `limit` objects holding the largest leases, largest first:
   * the ledger's opaque id, the name the holder was addressed by (each listed holder is asked; a
   * Tally user's 64-hex key, a topic, an account's did: what banpubkey, edge.blocktopic and
   * edge.purgetopic, edge.banaccount take), and its lease in bytes.
   */
  async largest(limit: number): Promise<Record<StorageKind, StorageHolder[]>> {
    const n = Math.max(1, Math.min(100, Math.floor(limit) || 10));
    const out = {} as Record<StorageKind, StorageHolder[]>;
    for (const kind of STORAGE_KINDS) {
      const rows = !this.schema.exists
        ? []
        : this.sql
            .exec<{ holder: string; bytes: number }>("SELECT holder, bytes FROM leases WHERE kind = ? ORDER BY bytes DESC LIMIT ?", kind, n)
            .toArray();
      out[kind] = await Promise.all(
        rows.map(async (r) => ({
          holder: r.holder,
          name: await leaseHolder(this.env, kind, r.holder)
            .holderName()
            .catch(() => null),
          bytes: r.bytes,
        })),
      );
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
        "SELECT kind, holder, bytes, updated_at FROM leases WHERE audited = 0 AND updated_at <= ? ORDER BY updated_at LIMIT ?",
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
        this.askLater(row.kind, row.holder, row.updated_at);
        continue;
      }
      const held = this.sql
        .exec<{ bytes: number; held: number; updated_at: number }>(
          "SELECT bytes, held, updated_at FROM leases WHERE kind = ? AND holder = ?",
          row.kind,
          row.holder,
        )
        .toArray()[0];
      if (!held || held.updated_at !== row.updated_at) continue; // changed meanwhile: not stale
      if (recorded >= 0 && recorded < held.bytes) {
        this.set(row.kind, row.holder, held, recorded, Math.min(held.held, recorded));
        taken += held.bytes - recorded;
      } else this.touch(row.kind, row.holder, row.updated_at);
    }
    if (taken > 0) log.info("storage: the audit took back leases their holders did not record", { bytes: taken });
    return due.length === STORAGE_LIMITS.lease_audit_batch ? Date.now() + AUDIT_NEXT_BATCH_MS : this.nextAudit();
  }

  /** Sends the figures to the stats object now (the deferred work calls it; tests may too). */
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

  /**
   * A lease checked and found right is not checked again until it changes (only when nothing
   * changed it meanwhile): the audit asks a holder once per change, never on a period, so a relay
   * whose holders keep what they hold wakes none of them (idle costs nothing).
   */
  private touch(kind: StorageKind, holder: string, was: number): void {
    this.sql.exec("UPDATE leases SET audited = 1 WHERE kind = ? AND holder = ? AND updated_at = ?", kind, holder, was);
  }

  /** A lease whose holder could not be asked: asked again a lease_audit_age_seconds later (only when nothing changed it meanwhile). */
  private askLater(kind: StorageKind, holder: string, was: number): void {
    this.sql.exec("UPDATE leases SET updated_at = ? WHERE kind = ? AND holder = ? AND updated_at = ?", Date.now(), kind, holder, was);
  }

  /** When the oldest lease not yet checked comes of audit age; null while there is none. */
  private nextAudit(): number | null {
    const oldest = this.sql.exec<{ t: number | null }>("SELECT MIN(updated_at) AS t FROM leases WHERE audited = 0").one().t;
    return oldest === null ? null : oldest + STORAGE_LIMITS.lease_audit_age_seconds * 1000;
  }

  /** The holder's lease and what it said it holds (zero when it has none). */
  private lease(kind: StorageKind, holder: string): Lease {
    if (!this.schema.exists) return { bytes: 0, held: 0 };
    return (
      this.sql.exec<Lease>("SELECT bytes, held FROM leases WHERE kind = ? AND holder = ?", kind, holder).toArray()[0] ?? {
        bytes: 0,
        held: 0,
      }
    );
  }

  /** The kind's leased bytes and held bytes across the relay. */
  private sum(kind: StorageKind): Lease {
    if (!this.schema.exists) return { bytes: 0, held: 0 };
    return this.sql.exec<Lease>("SELECT bytes, held FROM totals WHERE kind = ?", kind).toArray()[0] ?? { bytes: 0, held: 0 };
  }

  /** The holder's lease goes from `was` to `bytes` (of which it holds `held`), and the kind's sums with it, in one step. */
  private set(kind: StorageKind, holder: string, was: Lease, bytes: number, held: number): void {
    this.schema.ensure();
    held = Math.min(held, bytes);
    this.versions.set(key(kind, holder), (this.versions.get(key(kind, holder)) ?? 0) + 1);
    this.ctx.storage.transactionSync(() => {
      const holders = (was.bytes > 0 ? -1 : 0) + (bytes > 0 ? 1 : 0);
      if (bytes > 0) {
        this.sql.exec(
          "INSERT INTO leases (kind, holder, bytes, held, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (kind, holder) DO UPDATE SET bytes = excluded.bytes, held = excluded.held, updated_at = excluded.updated_at, audited = 0",
          kind,
          holder,
          bytes,
          held,
          Date.now(),
        );
      } else {
        this.sql.exec("DELETE FROM leases WHERE kind = ? AND holder = ?", kind, holder);
      }
      this.sql.exec(
        `INSERT INTO totals (kind, bytes, holders, held) VALUES (?, ?, ?, ?)
         ON CONFLICT (kind) DO UPDATE SET bytes = bytes + excluded.bytes, holders = holders + excluded.holders, held = held + excluded.held`,
        kind,
        bytes - was.bytes,
        holders,
        held - was.held,
      );
    });
    if (!this.auditArmed) {
      this.auditArmed = true;
      const at = this.nextAudit();
      if (at !== null) this.ctx.waitUntil(this.wakeAt(at));
    }
    this.reportLater.later();
  }
}

interface Lease extends Record<string, SqlStorageValue> {
  bytes: number;
  held: number;
}

const key = (kind: StorageKind, holder: string) => `${kind}:${holder}`;

function isKind(k: string): k is StorageKind {
  return (STORAGE_KINDS as readonly string[]).includes(k);
}

/** What the ledger asks a lease's holder (TallyUser, MincaMailbox, MincaAccount). */
interface LeaseHolder {
  leaseHeld(): number;
  leaseReclaim(): number | null;
  holderName(): string | null;
}

/** One holder in edge.liststorageholders. */
interface StorageHolder {
  holder: string;
  name: string | null;
  bytes: number;
}

/** The object holding a lease of `kind`, from its id (the ledger's `holder`). */
function leaseHolder(
  env: Env,
  kind: StorageKind,
  holder: string,
): { leaseHeld(): Promise<number>; leaseReclaim(): Promise<number | null>; holderName(): Promise<string | null> } {
  const ns = { tally: env.TALLY_USER, mailbox: env.MINCA_MAILBOX, host: env.MINCA_ACCOUNT }[kind] as unknown as DurableObjectNamespace<
    LeaseHolder & Rpc.DurableObjectBranded
  >;
  return ns.get(ns.idFromString(holder)) as unknown as {
    leaseHeld(): Promise<number>;
    leaseReclaim(): Promise<number | null>;
    holderName(): Promise<string | null>;
  };
}
