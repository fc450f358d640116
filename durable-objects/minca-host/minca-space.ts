// One space a Minca host carries (the Minca protocol §4.1-4.2; docs/hosting.md): its constitution, the accounts
// that carry it (with the read key each one's pass proved), and its log of versions. HTTP-only:
// the Worker routes POST/GET .../versions here over RPC. Every decision about bytes (the gates,
// what a carry-space record means, read proofs) is made in shared/minca; this object stores
// what they accept. A version is in SQLite before the answer leaves. Who carries the space (slots,
// read keys, the hand-over of bytes) is space-carriers.ts; what a request is charged, space-quota.ts.
import { StoredObject } from "../base/stored-object";
import { Waiters } from "../base/waiters";
import { MIGRATIONS } from "../../migrations/index";
import { MINCA_HOST_LIMITS } from "../../shared/limits";
import { checkReadProof } from "../../shared/minca/read-proof";
import type { Constitution } from "../../shared/minca/space";
import { checkVersion, outsideOf, rootOf, type VersionCheck, type VersionRefusal } from "../../shared/minca/version";
import type { Arrival } from "../../server/minca/wake";
import type { Appended, ArrivedVersion } from "../../server/minca/host-wire";
import type { PageQuery } from "../../shared/mailbox/messages";
import * as plans from "../../server/minca/append-plan";
import type { AppendPlan } from "../../server/minca/append-plan";
import { log } from "../../server/log";
import { fail, type ObjectResult } from "../base/result";
import { accountOf } from "./peers";
import { SpaceLog } from "./space-log";
import { SpaceCarriers } from "./space-carriers";
import { chargeShares, databasesKept, overSpaceBound, refund, refundAll, spaceFull } from "./space-quota";

/** What the append pipeline knows of the space. */
interface Carried {
  id: string;
  constitution: Constitution;
  /** The account whose carry space this is, or null. */
  carryOf: string | null;
  /** The accounts carrying it (the carry space: its account). */
  carrying: string[];
  ownMachinery: boolean;
}

/** What the account's carry records did (the carry space only). */
interface CarryOutcome {
  closed: boolean;
  revoked: string[];
}

export class MincaSpace extends StoredObject<Env, "read" | "write"> {
  private readonly log: SpaceLog;
  /** Who carries the space: the carriers table, its slots and read keys, the hand-over of bytes. */
  private readonly carriers: SpaceCarriers;
  /** Long-polls of the log, woken when versions are added. */
  private readonly waiters = new Waiters();

  constructor(ctx: DurableObjectState, env: Env) {
    // Per-client rates (in memory: an evicted object only forgives an idle client). Its schema is
    // made when an account first carries the space: a GET or POST of an unknown space stores nothing.
    super(ctx, env, {
      migrations: MIGRATIONS.MincaSpace,
      nameKey: "space",
      clientRates: {
        write: { burst: MINCA_HOST_LIMITS.write_versions_burst, perSecond: MINCA_HOST_LIMITS.write_versions_per_second },
        read: { burst: MINCA_HOST_LIMITS.read_burst, perSecond: MINCA_HOST_LIMITS.read_per_second },
      },
    });
    this.log = new SpaceLog(this.sql);
    this.carriers = new SpaceCarriers(ctx, env, this.meta, {
      id: () => this.id,
      constitution: () => this.constitution(),
      forget: () => this.forget(),
    });
  }

  // ---- carrying (called by MincaAccount) -------------------------------------------------------

  /** This space is `account`'s carry space (its own machinery). */
  openCarry(account: string, constitution: Constitution): void {
    this.schema.ensure();
    this.ctx.storage.transactionSync(() => {
      this.meta.set("space", this.id);
      this.meta.set("constitution", JSON.stringify(constitution));
      this.meta.set("carry_of", account);
    });
  }

  /**
   * `account` carries this space under its current pass, proving `readKey` (private spaces), the
   * space one of the account's own when `own` (space-carriers.ts: the carrier slots). False
   * (nothing kept) when the slots are full.
   */
  carry(account: string, constitution: Constitution, readKey: string | null, at: number, own = false): Promise<boolean> {
    this.schema.ensure();
    return this.carriers.carry(account, constitution, readKey, at, own);
  }

  /**
   * `account` no longer carries this space; `usage` is what it was charged for it: its bytes move
   * to another carrier, or with none the space is forgotten, unless `keepLast` ("kept").
   */
  uncarry(account: string, usage: { versions: number; bytes: number }, opts: { keepLast: boolean }): Promise<"kept" | "gone"> {
    if (!this.schema.exists) return Promise.resolve("gone");
    return this.carriers.uncarry(account, usage, opts);
  }

  /**
   * A carry space's records of the keys `of` wrote after `cutoff` (the profile's revocations):
   * for each (collection, key) such a version wrote, the latest version of it (by `at`, then
   * version id) that still counts — signed by no key in `revoked` after that key's cutoff — or
   * null when there is none.
   */
  history(
    of: string,
    cutoff: number,
    revoked: Array<{ did: string; cutoff: number | null }>,
  ): Array<{ collection: string; key: string; version: string | null }> {
    if (this.meta.get("carry_of") === null) return [];
    return this.log.history(of, cutoff, revoked);
  }

  /** Deletes every row this space holds. */
  forget(): void {
    if (!this.schema.exists) return;
    this.ctx.storage.transactionSync(() => {
      for (const t of ["log", "carriers", "meta"]) this.sql.exec(`DELETE FROM ${t}`);
      this.sql.exec("DELETE FROM sqlite_sequence WHERE name = 'log'");
    });
    this.waiters.wakeAll();
  }

  /** Versions and bytes held (for an account's status). */
  usage(): { versions: number; bytes: number } {
    if (!this.schema.exists) return { versions: 0, bytes: 0 };
    return this.log.usage();
  }

  // ---- the log (called by the Worker) -------------------------------------------------------

  /**
   * Runs each version through the gates and appends the accepted ones (the profile's "Carried
   * spaces"), as named steps over one plan (server/minca/append-plan.ts; docs/hosting.md, "A
   * version's way"): checks and dedup, revocation, quota, the carry space's records, the write,
   * then what follows it (refunds, waiters, wakes).
   */
  async append(
    arrived: ArrivedVersion[],
    opts: { requestHost?: string; client?: string } = {},
  ): Promise<ObjectResult<Appended & { databases: number }>> {
    const here = this.carried();
    if (here === null) return fail(404, "not_found", "this host does not carry that space");
    // Cheapest first: carried at all (above), then the client's rate, counted in versions (each a
    // signature to verify), before any signature.
    const limited = this.limited("write", opts.client ?? "", arrived.length);
    if (limited) return limited;
    let plan = await this.checkStep(here, arrived);
    plan = await this.revocationStep(here, plan);
    if (plans.freshOf(plan).length === 0) return this.answer(plan);
    if (
      overSpaceBound(
        this.usage(),
        here.carryOf,
        plans.freshOf(plan).map((f) => f.entry),
      )
    )
      return spaceFull();
    const quota = await chargeShares(this.env, here, plan);
    if (!quota.ok) return quota.error;
    plan = quota.plan;
    const carry = await this.carryRecordsStep(here, plan, opts);
    if (!carry.ok) {
      await refundAll(this.env, here.id, quota.charged);
      return carry.error;
    }
    plan = carry.plan;
    const written = this.writeStep(here, plan);
    if (written === null) {
      await refundAll(this.env, here.id, quota.charged);
      return spaceFull();
    }
    plan = written;
    await refund(this.env, here.id, plans.refundsOf(quota.charged, plan));
    await this.afterWriteStep(here, plan, carry.outcome);
    return this.answer(plan, databasesKept(quota.charged, plan));
  }

  /** What the space is to the append pipeline: its id, constitution, and who carries it; null when not carried. */
  private carried(): Carried | null {
    const constitution = this.constitution();
    const carryOf = this.meta.get("carry_of");
    const carriers = this.schema.exists ? this.carriers.list() : [];
    if (!constitution || (carryOf === null && carriers.length === 0)) return null;
    return {
      id: this.id,
      constitution,
      carryOf,
      carrying: carryOf !== null ? [carryOf] : carriers.map((c) => c.account),
      // The account's own spaces: its carry space, and a space a carrier's pass says is its own.
      ownMachinery: carryOf !== null || carriers.some((c) => c.own),
    };
  }

  /** Step 1, checks and dedup: the gates (shared/minca/version.ts), then whether the log holds each already. */
  private async checkStep(here: Carried, arrived: ArrivedVersion[]): Promise<AppendPlan> {
    const checks: VersionCheck[] = [];
    for (const a of arrived)
      checks.push(
        await checkVersion(a.value, { space: here.id, constitution: here.constitution, ownMachinery: here.ownMachinery }, a.bytes, a.raw),
      );
    // One look-up for the whole batch, not one statement per version.
    const held = this.log.seqsOf(checks.flatMap((c) => (c.ok ? [c.version.id] : [])));
    return plans.planArrivals(checks, arrived, (id) => held.get(id));
  }

  /** Step 2, revocation: a version signed by a key its root account revoked is refused in every space the host carries for it, unless its `at` is at most the revoke's cutoff. */
  private async revocationStep(here: Carried, plan: AppendPlan): Promise<AppendPlan> {
    const revoked = new Map<string, plans.RevokedKey[]>();
    for (const [root, authors] of plans.authorsByRoot(plan, here.carrying))
      revoked.set(root, await accountOf(this.env, root).revokedAmong(authors));
    return plans.refuseRevoked(plan, revoked);
  }

  /** Step 4, carry records: in the carry space, the account reads its records and keeps what they say, refusing some. */
  private async carryRecordsStep(
    here: Carried,
    plan: AppendPlan,
    opts: { requestHost?: string },
  ): Promise<{ ok: true; plan: AppendPlan; outcome: CarryOutcome } | { ok: false; error: ObjectResult<never> }> {
    if (here.carryOf === null) return { ok: true, plan, outcome: { closed: false, revoked: [] } };
    const fresh = plans.freshOf(plan);
    let applied: Awaited<ReturnType<ReturnType<typeof accountOf>["applyCarry"]>>;
    try {
      applied = await accountOf(this.env, here.carryOf).applyCarry(
        here.id,
        fresh.map((f) => f.entry.version),
        opts,
      );
    } catch (err) {
      // Nothing of the request is logged; records applied before the failure are applied again,
      // to the same effect, when the request is sent again (docs/hosting.md).
      log.error("minca space: the account could not apply its carry records", { err });
      return {
        ok: false,
        error: fail(503, "unavailable", "the host could not apply these records now: nothing was stored; send them again"),
      };
    }
    const refusals = new Map<number, { reason: VersionRefusal; detail: string }>();
    applied.verdicts.forEach((verdict, k) => {
      if (verdict !== null) refusals.set(fresh[k].index, verdict);
    });
    return { ok: true, plan: plans.refuseIn(plan, refusals), outcome: { closed: applied.closed, revoked: applied.revoked } };
  }

  /**
   * Step 5, the write: the space's bound again and the writes in one step (no await between
   * them); a request running alongside may have stored the same version meanwhile: it keeps its
   * first seq. Null when the space's bound would be passed (nothing written).
   */
  private writeStep(here: Carried, plan: AppendPlan): AppendPlan | null {
    const fresh = plans.freshOf(plan);
    return this.ctx.storage.transactionSync(() => {
      if (
        overSpaceBound(
          this.usage(),
          here.carryOf,
          fresh.map((f) => f.entry),
        )
      )
        return null;
      const written = new Map<number, { seq: number; added: boolean }>();
      for (const { index, entry } of fresh) written.set(index, this.log.insert(entry.version.id, entry.bytes, entry.raw));
      return plans.afterWrite(plan, written);
    });
  }

  /** Step 6, after the write: carry:closed and revokes take effect, waiters wake, and the carrying accounts hear of the new versions. */
  private async afterWriteStep(here: Carried, plan: AppendPlan, outcome: CarryOutcome): Promise<void> {
    if (outcome.closed) {
      // carry:closed: the account forgot everything; its carry space's log goes too.
      this.forget();
      return;
    }
    if (outcome.revoked.length > 0) await accountOf(this.env, here.carryOf!).recount(outcome.revoked);
    const added = plans.storedOf(plan);
    if (added.length === 0) return;
    this.waiters.wakeAll();
    // Pushing never delays accepting: the accounts hear of the new versions after the answer.
    const arrivals = added.map((e) => ({ arrival: { ...outsideOf(e.version), root: rootOf(e.version) }, raw: e.raw }));
    if (here.carryOf === null) this.ctx.waitUntil(this.arrived(here.id, here.carrying, arrivals));
  }

  /** The answer, and how many space databases it charged (`databases`, for the Worker's client share; not part of the answer). */
  private answer(plan: AppendPlan, databases = 0): ObjectResult<Appended & { databases: number }> {
    return { ok: true, value: { results: plans.answerOf(plan), databases } };
  }

  /** After the answer: each carrying account hears of the new versions (wakes, the Minca protocol §4.4). */
  private async arrived(space: string, accounts: string[], arrivals: Array<{ arrival: Arrival; raw: string }>): Promise<void> {
    await scheduler.wait(0);
    for (const account of accounts) {
      try {
        await accountOf(this.env, account).arrived(space, arrivals);
      } catch (err) {
        log.error("minca space: telling an account of new versions failed", { err });
      }
    }
  }

  /** A page of the log; a private space's only to a request proven with its read key. */
  /** A page of the log, as the text of a LogPage (the versions in it exactly as they arrived). */
  async page(q: PageQuery, proof: { authorization: string | null; time: string | null }, client = ""): Promise<ObjectResult<string>> {
    const here = this.carried();
    if (here === null) return fail(404, "not_found", "this host does not carry that space");
    const { id: space, constitution } = here;
    // Before the read proof's signature, and for every read (a long-poll included).
    const limited = this.limited("read", client);
    if (limited) return limited;
    if (constitution.visibility === "private") {
      const verdict = checkReadProof(proof, space, this.carriers.readKeys(constitution), Math.floor(Date.now() / 1000));
      if (verdict === "missing")
        return fail(401, "read_proof_required", "a private space's log is answered only to its read key (Authorization: MincaRead)");
      if (verdict === "invalid")
        return fail(403, "read_proof_invalid", "the read proof does not verify for this space, or its time is off");
    }
    const deadline = Date.now() + q.wait * 1000;
    for (;;) {
      const page = this.log.page(q.after, q.limit);
      const left = deadline - Date.now();
      if (page.count > 0 || left <= 0) return { ok: true, value: page.text };
      await this.waiters.wait(left);
    }
  }

  // ---- internals ------------------------------------------------------------------------------

  /** The client's rate on this space (per client address): the base's 429 with Retry-After when over. */
  private limited(kind: "read" | "write", client: string, n = 1): ObjectResult<never> | null {
    const what =
      kind === "write" ? `${MINCA_HOST_LIMITS.write_versions_per_second} versions` : `${MINCA_HOST_LIMITS.read_per_second} reads`;
    return this.limit(kind, client, `too many ${kind}s on this space (about ${what} a second); retry later`, n);
  }

  /**
   * The space's id: the name the object was addressed by (the runtime gives it), else the one it
   * stored when first carried.
   */
  private get id(): string {
    const id = this.name;
    if (id === null) throw new Error("a space object addressed by no name");
    return id;
  }

  private constitution(): Constitution | null {
    const c = this.meta.get("constitution");
    return c === null ? null : (JSON.parse(c) as Constitution);
  }
}
