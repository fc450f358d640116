// The one base every relay Durable Object stands on (the socket objects through socket-object.ts).
// What every object gets here, the one documented way:
// - its SQL schema, made on the first write that keeps something (schema.ts), with the `meta`
//   key/value table (meta.ts) that every class's migrations make;
// - the relay's settings, parsed (`settings`, object-settings.ts), never read from the environment;
// - its name: the name it was addressed by (`idFromName`), which the runtime hands the object in
//   `ctx.id.name` (fetch, RPC, alarms, woken sockets). workerd keeps the id an object was first
//   started with for the life of the process, so an object first reached by its id alone (the
//   ledger's audit asks holders by id) has no `ctx.id.name` until the process restarts: the name
//   is therefore also kept in `meta` (under `nameKey`) with the object's first write, and read
//   from there when the runtime does not tell it (as objects written by earlier versions of the
//   relay kept it). RPC methods never take their own object's name;
// - its alarm, at the earliest time anyone wants it (`wakeAt`), or at exactly the next time the
//   object needs (`alarmAt`), and the `onAlarm` hook that answers the next time; the same alarm
//   runs the object's deferred work (`deferred`, deferred.ts: the stats report, a lease's
//   give-back, ...) a flush interval after a burst, so no object keeps a timer;
// - its storage lease, when it holds one (`holdLease`): the ledger's two RPCs (`leaseHeld`,
//   `leaseReclaim`) and `wipe()`, the one way an object deletes all it keeps (the lease goes back
//   first, then the alarm and storage, and the memory of both last);
// - per-client token buckets (`admit`), held in memory, not applied to the shared client;
// - counts for the operator's status page (StatsReporter, sent off the request path), with its
//   usage: entries by cause and SQLite rows (object-usage.ts).
import { DurableObject } from "cloudflare:workers";
import type { Migration } from "../../migrations/index";
import { ClientBuckets, type Rate } from "../../shared/rate-limit";
import type { StatsGauges, StatsProtocol } from "../../server/stats";
import { StatsReporter } from "./stats-reporter";
import { ObjectUsage, countEntries } from "./object-usage";
import { isTrustedClient } from "./client-header";
import { LazySchema } from "./schema";
import { Meta } from "./meta";
import { Deferred } from "./deferred";

/** What the base needs of an object's storage lease (relay/storage-lease.ts). */
export interface ObjectLease {
  /** Bytes leased, as recorded in the object's meta. */
  readonly bytes: number;
  /** The ledger takes the slack back: the lease becomes what is held (null: a claim is under way). */
  reclaim(): number | null;
  /** The whole lease goes back to the ledger, recorded as none. */
  release(): Promise<void>;
  /** The storage was deleted: the lease in memory is none. */
  forget(): void;
}
import { fail, type ObjectResult } from "./result";
import { objectSettings, type Settings } from "./object-settings";

export interface StoredObjectOptions<K extends string = never, M extends string = string> {
  migrations: readonly Migration[];
  /** The protocol this object's counts are reported under (the status page); none: not counted. */
  protocol?: StatsProtocol;
  /** The `meta` key the object's name is kept under ("name" unless the class kept it under another before). */
  nameKey?: M | "name";
  /** Token-bucket rates per client and kind of request (`admit`). */
  clientRates?: Record<K, Rate>;
  /** The object keeps its own usage (the stats object: a report to itself would be a wake of its own). */
  ownUsage?: boolean;
}

export abstract class StoredObject<E, K extends string = never, M extends string = string> extends DurableObject<E> {
  protected readonly sql: SqlStorage;
  /** The schema, made on the first write that keeps something: guard reads with `schema.exists`, writes with `schema.ensure()`. */
  protected readonly schema: LazySchema;
  /** The `meta` key/value table, with this class's keys (M). */
  protected readonly meta: Meta<M>;
  /** Counts for the status page; objects add their own (deliveries) with `this.stats.count`. */
  protected readonly stats: StatsReporter;
  /** Entries into the object by cause and SQLite rows (object-usage.ts), reported with the stats. */
  readonly objectUsage: ObjectUsage;
  /** Work that waits for the end of a burst, run from the alarm (deferred.ts): its parts' `later()`. */
  protected readonly deferred: Deferred;
  private readonly rates: ClientBuckets<K> | undefined;
  private readonly nameKey: M | "name";
  private storedName: string | null = null;
  private heldLease: ObjectLease | undefined;

  constructor(ctx: DurableObjectState, env: E, options: StoredObjectOptions<K, M>) {
    super(ctx, env);
    countEntries(new.target.prototype, DurableObject.prototype);
    this.objectUsage = new ObjectUsage(
      new.target.name,
      ctx.storage.sql,
      () => this.stats.changed(),
      (closing) => this.deferred.exited(closing),
    );
    this.sql = ctx.storage.sql;
    this.schema = new LazySchema(ctx.storage, options.migrations);
    this.deferred = new Deferred(
      ctx,
      () => this.schema.exists,
      (at) => this.setEarliest(at),
      () => this.stats.gaugesChanged(),
    );
    this.meta = new Meta(this.schema);
    this.nameKey = options.nameKey ?? "name";
    this.rates = options.clientRates ? new ClientBuckets(options.clientRates) : undefined;
    this.stats = new StatsReporter(
      ctx,
      env as object,
      options.protocol,
      () => this.statsGauges(),
      this.deferred,
      options.ownUsage ? undefined : this.objectUsage,
    );
    // Kept with the first write, for the calls that reach the object by id alone.
    this.schema.onMake(() => {
      const name = ctx.id.name;
      if (name) this.meta.set(this.nameKey, name);
    });
  }

  /**
   * The name this object was addressed by (a user, room, topic, account), or null for an object
   * addressed by id alone that never stored one.
   */
  protected get name(): string | null {
    const name = this.ctx.id.name;
    if (name !== undefined && name !== "") return name;
    if (!this.storedName) this.storedName = this.meta.get(this.nameKey);
    return this.storedName;
  }

  /**
   * RPC, the admin API's edge.liststorageholders (through the ledger): the name this object was
   * addressed by (a Tally user's 64-hex key, a topic, an account's did), so that the operator can
   * act on a listed holder with the method that takes that name. Null when it never stored one.
   */
  holderName(): string | null {
    return this.name;
  }

  /** What this object holds now, for the status page (read when counts are sent). */
  protected statsGauges(): StatsGauges {
    return {};
  }

  /** The alarm fired; return the next time (ms) the object needs waking, or null. */
  protected onAlarm(_now: number): number | null | Promise<number | null> {
    return null;
  }

  /** The relay's settings, parsed once (object-settings.ts): objects never read them from the environment. */
  protected get settings(): Settings {
    return objectSettings(this.env as object);
  }

  /** The object keeps bytes against a relay-wide total through `lease` (relay/storage-lease.ts). */
  protected holdLease(lease: ObjectLease): void {
    this.heldLease = lease;
  }

  /** RPC, the ledger's audit (storage-lease.ts): the lease this object recorded, in bytes (0: none). Reads only. */
  leaseHeld(): number {
    return this.heldLease?.bytes ?? 0;
  }

  /** RPC, the ledger (storage-lease.ts): a claim elsewhere needs this lease's slack; the lease becomes what is held (null: busy). */
  leaseReclaim(): number | null {
    return this.heldLease ? this.heldLease.reclaim() : 0;
  }

  /**
   * Deletes everything the object keeps, in the one safe order: the lease goes back to the ledger
   * first, then the alarm and the storage go, and last the object forgets its schema and lease.
   * A crash between two steps charges nothing and loses nothing: after the release the rows are
   * still there (recorded as leasing none, so the next write leases again, or the next wipe
   * finishes); a delete before the release would leave the ledger charging a lease for nothing.
   * (The alarm goes before the storage: deleting it after deleteAll() would leave the runtime's
   * own table behind.)
   */
  protected async wipe(): Promise<void> {
    await this.heldLease?.release();
    await this.deferred.runNow(); // nothing deferred is left to write into the storage once it is gone
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.schema.forget();
    this.heldLease?.forget();
  }

  /** Sets the alarm to exactly `at` (ms since the epoch), or none when null: the next time the object needs waking. */
  protected async alarmAt(at: number | null): Promise<void> {
    const want = earliest(at, this.deferred.at);
    if (want === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(want);
  }

  /** Makes sure the alarm fires at or before `at` (ms since the epoch). */
  protected async wakeAt(at: number): Promise<void> {
    await this.setEarliest(at);
  }

  private async setEarliest(at: number): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > at) await this.ctx.storage.setAlarm(at);
  }

  /**
   * Takes `n` tokens of `kind` for `client` (the rates given as `clientRates`): null when
   * granted, else the seconds to wait (at least 1). The shared client (no trusted address) is
   * always granted: one bucket for everyone would let any client lock every other out; what bounds
   * a flood then is the object's own caps (docs/hostile.md, "Shared mode").
   */
  protected admit(kind: K, client: string, n = 1): number | null {
    if (!this.rates || !isTrustedClient(client)) return null;
    return this.rates.take(kind, client, n);
  }

  /** `admit` as an answer: null when granted, else the 429 rate_limited with its Retry-After and `message`. */
  protected limit(kind: K, client: string, message: string, n = 1): ObjectResult<never> | null {
    const wait = this.admit(kind, client, n);
    return wait === null ? null : fail(429, "rate_limited", message, wait);
  }

  /**
   * The alarm: the object's own causes (`onAlarm`, which answers its next time whether or not it
   * has come: an alarm for deferred work calls it too), then every part of its deferred work (the
   * stats report last, with this alarm's own usage); then the alarm is set to the earliest time
   * either still needs, or left unset.
   */
  async alarm(): Promise<void> {
    const now = Date.now();
    let next: number | null = null;
    this.deferred.alarmBegins(); // work asked for from here on runs at the end of this alarm
    try {
      next = await this.onAlarm(now);
    } finally {
      await this.deferred.alarmRuns();
    }
    const want = earliest(next, this.deferred.at);
    if (want !== null) {
      // The alarm that fired may still read as set (in the past): it does not count.
      const current = await this.ctx.storage.getAlarm();
      if (current === null || current <= now || current > want) await this.ctx.storage.setAlarm(want);
    }
  }
}

/** The earlier of two times (null: none). */
function earliest(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.min(a, b);
}
