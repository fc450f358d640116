// One account a Minca host carries for (the Minca protocol §4.2-4.4; docs/hosting.md): its carry space and
// the key that opens it, the spaces its passes name, its links, and the bytes it uses. The carry
// space's records drive it: the carry space's object hands over each accepted version, this
// object reads it with shared/minca/carry and keeps what it says (account-records.ts). Wakes
// become pushes in account-pushes.ts; the links a mailbox fetch is answered with are read in account-links.ts. carry:closed empties every table but the tombstone. An
// alarm expires an unproven binding, sweeps expired links and sends the pushes due.
import { StoredObject } from "../base/stored-object";
import { AccountStore } from "./account-store";
import { AccountRecords, type CarryVerdict } from "./account-records";
import { AccountPushes } from "./account-pushes";
import type { StorageLease } from "../relay/storage-lease";
import { TOMBSTONE_KEYS, type AccountMetaKey } from "./account-meta";
import { AccountUsage, type Reserved } from "./account-usage";
import { accountStatus } from "./account-status";
import { fail, type ObjectResult } from "../base/result";
import type { ServedLink } from "./account-links";
import { mailboxOf, spaceOf } from "./peers";
import { MIGRATIONS } from "../../migrations/index";
import { base64urlDecode, base64urlEncode } from "../../shared/encoding";
import { readCarryRecord, type CarryStart } from "../../shared/minca/carry";
import type { Arrival } from "../../server/minca/wake";
import { bodyKeyOf, readKeyDid, readSeedOf } from "../../shared/minca/space";
import { bindingBytes, bindingExpiry, bindingHolds } from "../../server/minca/binding";
import type { Version } from "../../shared/minca/version";
import { refusedAfterRevoke, type RevokedKey } from "../../server/minca/append-plan";
import type { AccountStatus, CarryStarted } from "../../server/minca/host-wire";

export class MincaAccount extends StoredObject<Env, never, AccountMetaKey> {
  private readonly store: AccountStore;
  private readonly records: AccountRecords;
  private readonly pushes: AccountPushes;
  /** The account's share of the host-wide total (storage.host_bytes): what its usage rows add up to, leased from the relay's ledger. */
  private readonly lease: StorageLease;
  private readonly usage: AccountUsage;
  /** The fetch wakes go out with: the runtime's (a worker test's subclass overrides it, test/worker/test-objects.ts). */
  protected pushFetch(url: string, init: RequestInit): Promise<Response> {
    return fetch(url, init);
  }

  constructor(ctx: DurableObjectState, env: Env) {
    // The schema is made when the account is first carried: a GET of an unknown account stores nothing.
    super(ctx, env, { migrations: MIGRATIONS.MincaAccount, nameKey: "account" });
    this.store = new AccountStore(ctx, this.schema, () => this.did());
    this.records = new AccountRecords(this.store, {
      settings: () => this.settings,
      space: (id) => this.space(id),
      mailbox: (topic) => this.mailbox(topic),
      schedule: () => this.schedule(),
      storeRow: (bytes, write) => this.usage.storeRow(bytes, write),
    });
    this.usage = new AccountUsage(this.store, env, this.deferred);
    this.lease = this.usage.lease;
    this.holdLease(this.lease);
    this.pushes = new AccountPushes(this.store, env, (url, init) => this.pushFetch(url, init));
  }

  // ---- connecting (POST /minca/v1/host/accounts) ----------------------------------------------

  /**
   * Starts carrying for the account with the carry space of a checked CarryGrant. The same carry
   * space again changes nothing (an unproven binding's clock starts again); a closed one is
   * refused (410). Another carry space replaces the current one only while the binding is
   * unproven (docs/hosting.md, "Binding an account": no version under the account's /account/write authority arrived in it),
   * so a grant anyone can post never takes over an account in use: else 409.
   */
  async startCarrying(start: CarryStart): Promise<ObjectResult<CarryStarted>> {
    if (this.meta.get("closed_space") === start.carrySpace)
      return fail(410, "carry_closed", "the account closed this carry space (carry:closed)");
    const current = this.liveCarry(Date.now());
    if (current === start.carrySpace) {
      if (!this.proven()) this.meta.set("bound_at", String(Date.now()));
      await this.schedule();
      return { ok: true, value: { account: start.account, carry_space: current } };
    }
    if (current !== null && this.proven())
      return fail(409, "carry_space_conflict", "this host already carries the account through another carry space");
    const stale = this.meta.get("carry_space");
    // The binding's rows (here and in the carry space's object) are charged to the host-wide
    // total before either is written, unproven bindings included: with no room, nothing is kept.
    const bound = await this.usage.storeRow(bindingBytes(start), () => {
      // A tombstone stays until the new binding is proven (prove()): a grant anyone may post
      // must not clear it, or the closed carry space could be connected again once that
      // binding expired.
      this.meta.delete("claimed", "name");
      // The name, kept for a start by id alone (the ledger's audit), also after a carry:closed emptied meta.
      this.meta.set("account", start.account);
      this.meta.set("carry_space", start.carrySpace);
      this.meta.set("carry_key", base64urlEncode(start.key));
      this.meta.set("bound_at", String(Date.now()));
      this.meta.set("binding_bytes", String(bindingBytes(start)));
      if (start.name !== undefined) this.meta.set("name", start.name);
    });
    if (!bound)
      return fail(507, "storage_full", "this host holds all it may for the accounts it carries (storage.host_bytes): nothing was stored");
    if (stale !== null && stale !== start.carrySpace) await this.space(stale).forget();
    await this.space(start.carrySpace).openCarry(start.account, start.constitution);
    await this.schedule();
    return { ok: true, value: { account: start.account, carry_space: start.carrySpace } };
  }

  /**
   * What the host holds for the account (GET /minca/v1/host/accounts/<did>), only to a request
   * proven with its carry space's read key (docs/hosting.md): none 401; a wrong one, or any for an
   * account the host does not carry for, 403; the closed carry space's key: 410.
   */
  async status(proof: { authorization: string | null; time: string | null }): Promise<ObjectResult<AccountStatus>> {
    // The object is named by the account's did: what it holds is that account's.
    return accountStatus(this.store, proof, { account: this.did(), carry: this.liveCarry(Date.now()), bytes: () => this.usage.used() });
  }

  /**
   * RPC, the admin API's ban (docs/admin-api.md, `edge.banaccount`): the host forgets everything
   * it holds for the account and keeps nothing, no tombstone: each space it carries loses it as a
   * carrier (a space no other account carries is forgotten with its log; one that others carry
   * keeps its log, its bytes charged to one of them), its carry space and links go, and its
   * whole lease goes back to the ledger. Grants and appends are refused by the Worker afterwards.
   */
  async purge(): Promise<{ spaces: number; links: number }> {
    if (!this.schema.exists) return { spaces: 0, links: 0 };
    const spaces = await this.leaveSpacesAndTopics(this.did());
    const carry = this.meta.get("carry_space");
    if (carry !== null) await this.space(carry).forget();
    const links = this.store.count("links");
    await this.wipe();
    return { spaces, links };
  }

  /** The carry space of a binding that holds at `now` (proven, or unproven and not expired), or null. */
  private liveCarry(now: number): string | null {
    const carry = this.meta.get("carry_space");
    if (carry === null) return null;
    return bindingHolds({ boundAt: Number(this.meta.get("bound_at") ?? 0), proven: this.proven() }, now) ? carry : null;
  }

  private proven(): boolean {
    return this.meta.get("claimed") !== null || this.meta.get("bound_at") === null; // bound before bindings expired: proven
  }

  /**
   * Binding proven (docs/hosting.md): a version under the account's /account/write authority arrived
   * in its carry space. The tombstone of an earlier carry:closed goes with the first proof.
   */
  private prove(): void {
    if (this.meta.get("claimed") !== null) return;
    this.meta.delete(...TOMBSTONE_KEYS);
    this.meta.set("claimed", "1");
  }

  /**
   * An unproven binding expired: its carry space goes, and the account's object keeps nothing,
   * or only the tombstone of an earlier carry:closed (the binding never proven, it is still the
   * account's last word).
   */
  private async expireBinding(): Promise<void> {
    const carry = this.meta.get("carry_space");
    if (carry === null || this.liveCarry(Date.now()) !== null) return;
    await this.space(carry).forget();
    const closedAt = this.meta.get("closed_at");
    if (closedAt === null && this.store.revokes.count() === 0) return this.wipe();
    this.keepOnlyTombstone({ at: closedAt, space: this.meta.get("closed_space"), readKey: this.meta.get("closed_read_key") });
    await this.lease.settle(); // the lease keeps what the tombstone holds (AccountUsage.tombstoneHeld)
  }

  // ---- the carry space's records (called by the carry space's MincaSpace) ---------------------

  /**
   * Reads each accepted version of the carry space (in order) and keeps what it says: one verdict
   * per version, null when it is taken (a refused one is not stored in the log either).
   * `closed` once carry:closed was read: everything is forgotten, and the rest is moot.
   * `revoked`: the keys this batch revoked with a cutoff; once the versions are in the log, the
   * space calls recount() with them.
   */
  async applyCarry(
    space: string,
    versions: Version[],
    opts: { requestHost?: string } = {},
  ): Promise<{ verdicts: CarryVerdict[]; closed: boolean; revoked: string[] }> {
    const verdicts: CarryVerdict[] = [];
    const revoked: string[] = [];
    const bodyKey = this.carryBodyKey(space);
    if (bodyKey === null) {
      return {
        verdicts: versions.map(() => ({ reason: "unreadable_record", detail: "not this account's carry space" })),
        closed: false,
        revoked,
      };
    }
    for (const v of versions) {
      // A key revoked (earlier in this batch too) writes nothing after its cutoff, and never
      // carry:closed; what it wrote at or before the cutoff is vouched for (docs/hosting.md, "Revokes").
      const rec = readCarryRecord(v, bodyKey);
      const revokedBy = this.records.revokedKey(v.author);
      const repeats = rec.kind === "revoke" && rec.revoked === v.author; // its revoke of itself, copied again
      if (revokedBy !== null && !repeats && (refusedAfterRevoke(v.at, revokedBy.cutoff) || rec.kind === "closed")) {
        verdicts.push({ reason: "revoked", detail: "the account revoked the key that signed this version" });
        continue;
      }
      if (rec.kind === "closed") {
        await this.close();
        return { verdicts: [...verdicts, ...versions.slice(verdicts.length).map(() => null)], closed: true, revoked: [] };
      }
      if (rec.kind === "revoke") {
        if (this.records.revoke(rec.revoked, rec.cutoff) !== null) revoked.push(rec.revoked);
      } else {
        const verdict = await this.records.keep(rec, v, { ...opts, current: false });
        if (verdict) {
          verdicts.push(verdict);
          continue;
        }
      }
      this.prove();
      verdicts.push(null);
    }
    this.lease.free(() => undefined); // a deleted pass took its space's usage with it: what the lease no longer needs goes back
    return { verdicts, closed: false, revoked };
  }

  /** The keys among `authors` the account revoked, with each revoke's cutoff (docs/hosting.md, "Revokes"). */
  revokedAmong(authors: string[]): RevokedKey[] {
    return authors.flatMap((a) => this.records.revokedKey(a) ?? []);
  }

  /**
   * After revokes with a cutoff were stored: what each key wrote in the carry space after its
   * cutoff stops counting (account-records.ts). What was stored stays in the log.
   */
  async recount(revoked: string[]): Promise<void> {
    const carry = this.meta.get("carry_space");
    const bodyKey = carry === null ? null : this.carryBodyKey(carry);
    if (carry === null || bodyKey === null) return;
    await this.records.recount(carry, bodyKey, revoked);
    this.lease.free(() => undefined); // records that stopped counting took usage with them
  }

  private carryBodyKey(space: string): Uint8Array | null {
    const keyB64 = this.meta.get("carry_key");
    if (space !== this.meta.get("carry_space") || keyB64 === null) return null;
    return bodyKeyOf(base64urlDecode(keyB64));
  }

  // ---- bounds (called by MincaSpace; account-usage.ts) ----------------------------------------

  reserve(space: string, versions: number, bytes: number, relief = false): Promise<Reserved> {
    return this.usage.reserve(space, versions, bytes, relief);
  }

  refund(space: string, versions: number, bytes: number): void {
    this.usage.refund(space, versions, bytes);
  }

  adopt(space: string, versions: number, bytes: number): Promise<boolean> {
    return this.usage.adopt(space, versions, bytes);
  }

  lostSlot(space: string): { versions: number; bytes: number } {
    return this.usage.lostSlot(space);
  }

  // ---- links (called by MincaMailbox) ---------------------------------------------------------

  /**
   * The account's links of `topic` a mailbox fetch is answered with (the Minca protocol §4.2): among its 64
   * most recently written live links, those whose topic (computed from the blob) is `topic`, each
   * distinct blob once with its latest `until`. A topic is computed from its blob, so that is one
   * blob, however many links name it. With `withBlob` false (the mailbox already holds the blob,
   * from another account) the blob is not loaded: `blob` is null and only `until` counts. So one
   * mailbox GET loads one blob, not one per account and link.
   */
  linksFor(topic: string, withBlob = true): ServedLink[] {
    if (!this.schema.exists) return [];
    return this.store.links.served(topic, withBlob);
  }

  // ---- wakes (the Minca protocol §4.4) -------------------------------------------------------------------------

  /**
   * New versions were stored (and answered) in a space the account carries: each that wakes one
   * of its wakes queues one push per live receiver; the alarm sends them. A version that wakes
   * nothing queues nothing, so it costs no outbound request.
   */
  async arrived(_space: string, arrivals: Array<{ arrival: Arrival; raw: string }>): Promise<void> {
    const account = this.meta.get("account");
    if (account === null || this.meta.get("carry_space") === null) return;
    if (this.pushes.queue(account, arrivals) > 0) await this.schedule();
  }

  // ---- alarm: expired links, pushes due -------------------------------------------------------

  protected async onAlarm(): Promise<number | null> {
    if (!this.schema.exists) return null;
    await this.expireBinding();
    if (!this.schema.exists) return null;
    await this.records.expireLinks();
    this.lease.free(() => undefined); // expired links took their bytes with them
    await this.pushes.sendDue();
    return this.nextAlarm(); // the base sets the alarm to it (or none)
  }

  // ---- internals ------------------------------------------------------------------------------

  /** carry:closed: stop carrying for the account and forget everything held for it. */
  private async close(): Promise<void> {
    const account = this.meta.get("account")!;
    const carry = this.meta.get("carry_space");
    const key = this.meta.get("carry_key");
    const readKey = key === null ? null : readKeyDid(readSeedOf(base64urlDecode(key)));
    await this.leaveSpacesAndTopics(account);
    this.keepOnlyTombstone({ at: String(Date.now()), space: carry, readKey });
    await this.lease.settle(); // the lease keeps what the tombstone holds (AccountUsage.tombstoneHeld)
    await this.alarmAt(null);
  }

  /**
   * The account leaves what it reaches (carry:closed, a ban): each carried space hands what the
   * account was charged for it to an account that still carries it (or, carried by no other, is
   * forgotten with its log), and each mailbox topic its links name stops serving them. Answers how
   * many spaces it carried.
   */
  private async leaveSpacesAndTopics(account: string): Promise<number> {
    const carried = this.store.passes.carried();
    for (const c of carried) await this.space(c.space).uncarry(account, { versions: c.versions, bytes: c.bytes }, { keepLast: false });
    for (const topic of this.store.links.topics()) await this.mailbox(topic).unlinkAccount(account);
    return carried.length;
  }

  /**
   * Empties every table but the tombstone: its three meta rows and the account's revoked keys
   * (docs/hosting.md, "The tombstone"), so a key revoked once stays revoked at this host across
   * carry:closed and a new CarryGrant; and the lease, which keeps charging them to the host total.
   */
  private keepOnlyTombstone(t: { at: string | null; space: string | null; readKey: string | null }): void {
    this.ctx.storage.transactionSync(() => {
      for (const table of ["passes", "links", "usage", "wakes", "receivers", "pushes", "latest"]) this.sql.exec(`DELETE FROM ${table}`);
      this.meta.clear();
      this.sql.exec("DELETE FROM sqlite_sequence");
      if (t.at !== null) this.meta.set("closed_at", t.at);
      if (t.space !== null) this.meta.set("closed_space", t.space);
      if (t.readKey !== null) this.meta.set("closed_read_key", t.readKey);
    });
  }

  /** Sets the alarm to exactly the next time the account needs it (nextAlarm), or none. */
  private schedule(): Promise<void> {
    return this.alarmAt(this.nextAlarm());
  }

  /** The next link expiry, the next push due (the next minute when this one's budget is spent), or an unproven binding's expiry. */
  private nextAlarm(): number | null {
    if (!this.schema.exists) return null;
    const until = this.store.links.nextUntil();
    const push = this.pushes.nextDue();
    const boundAt = this.meta.get("bound_at");
    const binding =
      boundAt === null || this.meta.get("carry_space") === null ? null : bindingExpiry({ boundAt: Number(boundAt), proven: this.proven() });
    const times = [until === null ? null : until * 1000, push, binding].filter((t): t is number => t !== null);
    return times.length === 0 ? null : Math.min(...times);
  }

  /** The account's did: the name the object was addressed by (the runtime gives it), else the one it kept. */
  private did(): string {
    const did = this.name;
    if (did === null) throw new Error("an account object addressed by no name");
    return did;
  }

  private space(id: string) {
    return spaceOf(this.env, id);
  }

  private mailbox(topic: string) {
    return mailboxOf(this.env, topic);
  }
}
