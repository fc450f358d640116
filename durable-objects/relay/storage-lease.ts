// An object's lease of bytes from the relay's storage ledger (relay-ledger.ts; docs/hostile.md,
// "Relay-wide totals"). A holder uses two calls:
// - `store(bytes, write)`: runs `write` in one transaction and charges what the object then holds
//   against the lease in the same synchronous step (no await between the check and the charge).
//   Past the lease the write is rolled back, the ledger is asked once for more, and the write runs
//   again; a total with no room answers `{ stored: false }` (the holder answers storage_full).
//   After a write the lease is topped up ahead of need, off the request path.
// - `free(remove)`: runs a delete; within the flush interval what the lease no longer needs goes
//   back to the ledger (deferred work: from the object's alarm, base/deferred.ts; computed from
//   what is stored, so an object evicted before its alarm gives back all the same).
// and `settle()` after a delete that must be given back at once. An object that deletes all it
// holds does so with the base's `wipe()` (stored-object.ts), which gives the whole lease back
// first (`release()`) and forgets it last (`forget()`). The lease is kept in the object's `meta`
// table (under LEASE_META_KEY, through meta.ts), so an evicted object knows what it holds.
// Ledger calls run one at a time.
// The slack of a lease (leased beyond what the object holds) is lent: when a claim elsewhere finds
// the total taken by leases but not by what is held, the ledger calls the holder's
// `leaseReclaim()` (`reclaim()` here), which keeps only what the object holds, at once.
// What an object holds is its rows plus, while it holds any, the fixed cost of its database
// (storage.database_bytes_<kind>: the bytes an object with its tables takes on disk), so the
// first row of a name charges its database too.
import type { LazySchema } from "../base/schema";
import type { Deferred, DeferredPart } from "../base/deferred";
import { LEASE_META_KEY, Meta } from "../base/meta";
import type { ObjectLease } from "../base/stored-object";
import { relayLedger, type RelayLedger } from "./relay-ledger";
import { STORAGE_LIMITS } from "../../shared/limits";
import { leaseBlock, leaseKeep, leaseRequest, type StorageKind } from "../../shared/storage";
import { log } from "../../server/log";

/** What an object of `kind` holding rows of `rows` bytes holds against its total: those and, with any row, its database. */
export function heldWithDatabase(kind: StorageKind, rows: number): number {
  return rows > 0 ? rows + STORAGE_LIMITS[`database_bytes_${kind}`] : 0;
}

export class StorageLease implements ObjectLease {
  private granted: number | undefined;
  private chain: Promise<unknown> = Promise.resolve();
  private readonly giveBack: DeferredPart;
  private toppingUp = false;
  /** A claim of this object is at the ledger: a reclaim now would race its answer, so it is declined. */
  private claiming = 0;
  private readonly meta: Meta<never>;

  constructor(
    private readonly ctx: DurableObjectState,
    deferred: Deferred,
    private readonly env: { RELAY_LEDGER: DurableObjectNamespace<RelayLedger> },
    private readonly kind: StorageKind,
    private readonly schema: LazySchema,
    /** The bytes of this kind the object's rows hold now (its database's fixed cost is added here). */
    private readonly rows: () => number,
  ) {
    this.giveBack = deferred.part(() => this.settle());
    this.meta = new Meta(schema);
  }

  /**
   * Stores through the lease: `write` runs in one transaction (made after the schema, so a refusal
   * keeps nothing) and answers its value and the bytes of this kind the object then holds (`held`
   * undefined: it wrote nothing, e.g. a refusal of its own). `bytes` is what the write adds: an
   * object that holds nothing yet asks the ledger for it before it makes its schema. Past the
   * lease the transaction is rolled back, the ledger is asked once for a lease that covers it, and
   * `write` runs again; still past it, or the ledger has no room: `{ stored: false }`.
   * `rolledBack` runs at once (before anything else can run) whenever a transaction of `write` is
   * rolled back, for a holder that keeps in memory what `write` changed.
   */
  async store<T>(
    bytes: number,
    write: () => { value: T; held?: number },
    rolledBack?: () => void,
  ): Promise<{ stored: true; value: T } | { stored: false }> {
    const first = this.held(bytes);
    if (!this.schema.exists && !this.covers(first) && !(await this.extend(first))) return { stored: false };
    for (let attempt = 0; ; attempt++) {
      this.schema.ensure();
      let out: { value: T; held?: number };
      try {
        out = this.ctx.storage.transactionSync(() => {
          const r = write();
          if (r.held === undefined) return r;
          const held = this.held(r.held);
          if (!this.covers(held)) throw new OverLease(held); // rolled back: nothing kept
          return { value: r.value, held };
        });
      } catch (err) {
        rolledBack?.();
        if (!(err instanceof OverLease)) throw err;
        if (attempt > 0 || !(await this.extend(err.total))) return { stored: false };
        continue;
      }
      if (out.held !== undefined) this.ahead(out.held);
      return { stored: true, value: out.value };
    }
  }

  /** Runs `remove` (a delete of what the lease covers): what the lease no longer needs goes back soon. */
  free<T>(remove: () => T): T {
    const r = remove();
    this.changed();
    return r;
  }

  /** Bytes leased to this object. */
  get bytes(): number {
    if (this.granted === undefined) {
      this.granted = Number(this.meta.get(LEASE_META_KEY) ?? 0);
    }
    return this.granted;
  }

  /** Whether holding `total` bytes stays within the lease (synchronous: check and write in one step). */
  private covers(total: number): boolean {
    return total <= this.bytes;
  }

  /**
   * Asks the ledger for a lease that covers holding `need` bytes; true once it does. False when
   * the kind's relay-wide total has no room (or the ledger cannot be asked). The caller checks
   * covers() again, synchronously, with its write.
   */
  private extend(need: number, held = need): Promise<boolean> {
    return this.serial(async () => {
      if (this.covers(need)) return true;
      const { want } = leaseRequest(need);
      this.claiming++;
      try {
        const r = await this.ledger().claim(this.kind, this.holder(), need, want, held);
        this.keep(r.granted);
        return r.ok && this.covers(need);
      } catch (err) {
        log.error("storage: the ledger could not be asked for a lease", { kind: this.kind, err });
        return false;
      } finally {
        this.claiming--;
      }
    });
  }

  /**
   * After a write: when less than half a block of the lease is left, asks for the next one in
   * the background, so the next writes find room without waiting on the ledger.
   */
  private ahead(used: number): void {
    if (this.toppingUp || this.bytes - used >= leaseBlock(used) / 2) return;
    this.toppingUp = true;
    this.ctx.waitUntil(
      this.extend(used + leaseBlock(used), used).finally(() => {
        this.toppingUp = false;
      }),
    );
  }

  /** What the object holds went down: within the flush interval, what the lease no longer needs goes back. */
  private changed(): void {
    if (this.bytes === 0) return;
    this.giveBack.later();
  }

  /** Gives back what leaseKeep() says the lease no longer needs (the lease shrinks here first, then at the ledger). */
  settle(): Promise<void> {
    return this.serial(async () => {
      if (this.bytes === 0) return;
      const held = this.schema.exists ? this.held(this.rows()) : 0;
      const keep = leaseKeep(held, this.bytes);
      if (keep >= this.bytes) return;
      this.keep(keep);
      await this.tell(keep, held);
    });
  }

  /**
   * The ledger takes this lease's slack back (a claim elsewhere needs it): the lease becomes what
   * the object holds now, synchronously (no write of this object can fall between), and that is
   * the answer. Null, and nothing changes, while a claim of this object is at the ledger.
   */
  reclaim(): number | null {
    if (this.claiming > 0) return null;
    const held = this.schema.exists ? this.held(this.rows()) : 0;
    if (held < this.bytes) this.keep(held);
    return this.bytes;
  }

  /** Before the object deletes its storage (the base's wipe()): the whole lease goes back, and is recorded as none. */
  release(): Promise<void> {
    return this.serial(async () => {
      if (this.bytes === 0) return;
      this.keep(0);
      await this.tell(0, 0);
    });
  }

  /** The object deleted its storage (the base's wipe()): it holds no lease. */
  forget(): void {
    this.granted = 0;
  }

  /** What holding rows of `rows` bytes holds against the total: with any row, the database's fixed cost too. */
  private held(rows: number): number {
    return heldWithDatabase(this.kind, rows);
  }

  private async tell(keep: number, held: number): Promise<void> {
    try {
      await this.ledger().release(this.kind, this.holder(), keep, held);
    } catch (err) {
      // The ledger keeps counting the larger lease (never too little); the next settle tells it again.
      log.warn("storage: a lease could not be given back now", { kind: this.kind, err });
    }
  }

  private keep(bytes: number): void {
    if (bytes === this.bytes) return;
    this.granted = bytes;
    if (bytes === 0 && !this.schema.exists) return;
    this.meta.set(LEASE_META_KEY, String(bytes));
  }

  private serial<T>(f: () => Promise<T>): Promise<T> {
    const next = this.chain.then(f, f);
    this.chain = next.catch(() => undefined);
    return next;
  }

  private holder(): string {
    return this.ctx.id.toString();
  }

  private ledger(): DurableObjectStub<RelayLedger> {
    return relayLedger(this.env);
  }
}

/** Thrown inside a write's transaction when what the object would hold passes its lease: the write is rolled back. */
class OverLease extends Error {
  constructor(readonly total: number) {
    super(`over the storage lease (${total} bytes)`);
  }
}
