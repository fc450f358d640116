// One account a Minca host carries for (DESIGN 8.3-8.5, seed 002 §4.2-4.3): its carry space and
// the key that opens it, the spaces its passes name, its links, and the bytes it uses. The carry
// space's records drive it: the carry space's object hands over each accepted version, this
// object reads it with shared/minca/carry and keeps what it says. carry:closed empties every
// table but the tombstone. An alarm sweeps expired links.
import { DurableObject } from "cloudflare:workers";
import { OwnName } from "./own-name";
import { LazySchema } from "./schema";
import type { HostResult } from "./minca-space";
import { MIGRATIONS } from "../migrations/index";
import type { ErrorCode } from "../shared/errors";
import { base64urlDecode, base64urlEncode } from "../shared/encoding";
import { MINCA_HOST_LIMITS, MINCA_WAKE_LIMITS } from "../shared/limits";
import { LINK, PASS, readCarryRecord, RECEIVER, WAKE, type CarryRecord, type CarryStart, type WakeBody } from "../shared/minca/carry";
import { wakeMatches, wakePayload, wakeTopic, type Arrival } from "../shared/minca/wake";
import { checkPushEndpoint, endpointPolicy } from "../shared/webpush/endpoint";
import { retryDelaySeconds, WebPushSender, type FetchLike, type PushOutcome } from "../shared/webpush/send";
import { relayPushSender } from "./relay-keys";
import { admitPushes } from "./push-gate";
import { bodyKeyOf, readKeyDid, readSeedOf } from "../shared/minca/space";
import { bindingExpiry, bindingHolds, checkStatusProof } from "../shared/minca/binding";
import type { Version, VersionRefusal } from "../shared/minca/version";
import type { AccountStatus, CarryStarted } from "../shared/minca/host-wire";
import { log } from "../shared/log";

export type CarryVerdict = { reason: VersionRefusal; detail: string } | null;

interface LinkRow extends Record<string, SqlStorageValue> {
  key: string;
  topic: string;
  blob: ArrayBuffer;
  until: number;
  at: number;
}

const fail = (status: number, code: ErrorCode, message: string): HostResult<never> => ({ ok: false, status, code, message });

const nowSeconds = () => Math.floor(Date.now() / 1000);

interface PushRow extends Record<string, SqlStorageValue> {
  id: number;
  receiver: string;
  endpoint: string;
  payload: ArrayBuffer;
  topic: string;
  attempts: number;
  p256dh: string;
  auth: string;
}

export class MincaAccount extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  /** Made when the account is first carried: a GET of an unknown account stores nothing. */
  private readonly schema: LazySchema;
  private readonly ownAccount: OwnName;
  /** The fetch wakes go out with (tests may replace it). */
  pushFetch: FetchLike = (url, init) => fetch(url, init);
  private sender: WebPushSender | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.schema = new LazySchema(ctx.storage, MIGRATIONS.MincaAccount);
    this.ownAccount = new OwnName(this.schema, "account");
  }

  // ---- connecting (POST /minca/v1/host/accounts) ----------------------------------------------

  /**
   * Starts carrying for the account with the carry space of a checked CarryGrant. The same carry
   * space again changes nothing (an unproven binding's clock starts again); a closed one is
   * refused (410). Another carry space replaces the current one only while the binding is
   * unproven (DESIGN 8.3: no version under the account's /account/write authority arrived in it),
   * so a grant anyone can post never takes over an account in use: else 409.
   */
  async startCarrying(start: CarryStart): Promise<HostResult<CarryStarted>> {
    this.remember(start.account);
    if (this.meta("closed_space") === start.carrySpace) return fail(410, "carry_closed", "the account closed this carry space (carry:closed)");
    const current = this.liveCarry(Date.now());
    if (current === start.carrySpace) {
      if (!this.proven()) this.setMeta("bound_at", String(Date.now()));
      await this.schedule();
      return { ok: true, value: { account: start.account, carry_space: current } };
    }
    if (current !== null && this.proven()) return fail(409, "carry_space_conflict", "this host already carries the account through another carry space");
    const stale = this.meta("carry_space");
    if (stale !== null) await this.space(stale).forget();
    await this.space(start.carrySpace).openCarry(start.carrySpace, start.account, start.constitution);
    this.schema.ensure();
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("DELETE FROM meta WHERE key IN ('closed_at', 'closed_space', 'closed_read_key', 'claimed', 'name')");
      this.setMeta("carry_space", start.carrySpace);
      this.setMeta("carry_key", base64urlEncode(start.key));
      this.setMeta("bound_at", String(Date.now()));
      if (start.name !== undefined) this.setMeta("name", start.name);
    });
    await this.schedule();
    return { ok: true, value: { account: start.account, carry_space: start.carrySpace } };
  }

  /**
   * What the host holds for the account (GET /minca/v1/host/accounts/<did>), only to a request
   * proven with its carry space's read key (DESIGN 8.3): none 401; a wrong one, or any for an
   * account the host does not carry for, 403; the closed carry space's key: 410.
   */
  async status(account: string, proof: { authorization: string | null; time: string | null }): Promise<HostResult<AccountStatus>> {
    const now = Date.now();
    // The object is named by the account's did: what it holds is that account's.
    const carry = this.liveCarry(now);
    const closedSpace = this.meta("closed_space");
    const closedKey = this.meta("closed_read_key");
    const target =
      carry !== null
        ? { space: carry, readKey: readKeyDid(readSeedOf(base64urlDecode(this.meta("carry_key")!))) }
        : closedSpace !== null && closedKey !== null
          ? { space: closedSpace, readKey: closedKey }
          : null;
    const verdict = checkStatusProof(proof, target, Math.floor(now / 1000));
    if (verdict === "missing") return fail(401, "read_proof_required", "an account's status is answered only to its carry space's read key (Authorization: MincaRead)");
    if (verdict === "invalid") return fail(403, "read_proof_invalid", "the proof does not verify with the read key of a carry space this host holds for that account");
    if (carry === null) return fail(410, "carry_closed", "the account closed its carry space: the host holds nothing for it");
    const used = this.sql.exec<{ v: number; b: number }>("SELECT COALESCE(SUM(versions), 0) AS v, COALESCE(SUM(bytes), 0) AS b FROM usage").one();
    return {
      ok: true,
      value: {
        account,
        name: this.meta("name"),
        carry_space: carry,
        spaces: this.count("passes"),
        links: this.count("links"),
        wakes: this.count("wakes"),
        receivers: this.count("receivers"),
        versions: used.v,
        bytes: used.b,
      },
    };
  }

  /** The carry space of a binding that holds at `now` (proven, or unproven and not expired), or null. */
  private liveCarry(now: number): string | null {
    const carry = this.meta("carry_space");
    if (carry === null) return null;
    return bindingHolds({ boundAt: Number(this.meta("bound_at") ?? 0), proven: this.proven() }, now) ? carry : null;
  }

  private proven(): boolean {
    return this.meta("claimed") !== null || this.meta("bound_at") === null; // bound before bindings expired: proven
  }

  /** An unproven binding expired: its carry space goes, and the account's object keeps nothing but a tombstone it had. */
  private async expireBinding(): Promise<void> {
    const carry = this.meta("carry_space");
    if (carry === null || this.liveCarry(Date.now()) !== null) return;
    await this.space(carry).forget();
    if (this.meta("closed_space") === null) {
      await this.ctx.storage.deleteAll();
      this.schema.forget();
      this.ownAccount.reset();
      return;
    }
    this.sql.exec("DELETE FROM meta WHERE key IN ('carry_space', 'carry_key', 'bound_at', 'claimed', 'name')");
  }

  // ---- the carry space's records (called by the carry space's MincaSpace) ---------------------

  /**
   * Reads each accepted version of the carry space (in order) and keeps what it says: one verdict
   * per version, null when it is taken (a refused one is not stored in the log either).
   * `closed` once carry:closed was read: everything is forgotten, and the rest is moot.
   * `revoked`: the keys this batch revoked; once the versions are in the log, the space calls
   * recount() with them.
   */
  async applyCarry(space: string, versions: Version[], opts: { requestHost?: string } = {}): Promise<{ verdicts: CarryVerdict[]; closed: boolean; revoked: string[] }> {
    const verdicts: CarryVerdict[] = [];
    const revoked: string[] = [];
    const bodyKey = this.carryBodyKey(space);
    if (bodyKey === null) {
      return { verdicts: versions.map(() => ({ reason: "unreadable_record", detail: "not this account's carry space" })), closed: false, revoked };
    }
    for (const v of versions) {
      // A key revoked earlier in this batch writes nothing after it (DESIGN 8.4).
      if (this.isRevoked(v.author)) {
        verdicts.push({ reason: "revoked", detail: "the account revoked the key that signed this version" });
        continue;
      }
      const rec = readCarryRecord(v, bodyKey);
      if (rec.kind === "closed") {
        await this.close();
        return { verdicts: [...verdicts, ...versions.slice(verdicts.length).map(() => null)], closed: true, revoked: [] };
      }
      if (rec.kind === "revoke") {
        const verdict = this.revoke(rec.revoked);
        if (verdict) {
          verdicts.push(verdict);
          continue;
        }
        revoked.push(rec.revoked);
      } else {
        const verdict = await this.keep(rec, v, { ...opts, current: false });
        if (verdict) {
          verdicts.push(verdict);
          continue;
        }
      }
      // Binding proven (DESIGN 8.3): a version under the account's /account/write authority arrived.
      this.setMeta("claimed", "1");
      verdicts.push(null);
    }
    return { verdicts, closed: false, revoked };
  }

  /** The keys among `authors` the account revoked (DESIGN 8.4). */
  revokedAmong(authors: string[]): string[] {
    return authors.filter((a) => this.isRevoked(a));
  }

  /**
   * After revokes were stored: what each revoked key wrote in the carry space stops counting.
   * Each record it touched is set again from its latest version signed by no revoked key, or
   * dropped when there is none. What was stored stays in the log.
   */
  async recount(revoked: string[]): Promise<void> {
    const carry = this.meta("carry_space");
    const bodyKey = carry === null ? null : this.carryBodyKey(carry);
    if (carry === null || bodyKey === null) return;
    const all = this.sql.exec<{ did: string }>("SELECT did FROM revoked").toArray().map((r) => r.did);
    for (const did of revoked) {
      for (const h of await this.space(carry).history(did, all)) {
        if (h.version === null) {
          await this.drop(h.collection, h.key);
          continue;
        }
        const v = JSON.parse(h.version) as Version;
        const rec = readCarryRecord(v, bodyKey);
        if (rec.kind === "closed" || rec.kind === "revoke" || rec.kind === "refused") continue;
        if ((await this.keep(rec, v, { current: true })) !== null) await this.drop(h.collection, h.key);
      }
    }
  }

  /** A revoke, kept for good (a deleted or rewritten revoke record takes nothing back). */
  private revoke(did: string): CarryVerdict {
    if (this.isRevoked(did)) return null;
    if (this.count("revoked") >= MINCA_HOST_LIMITS.max_revocations_per_account) {
      return { reason: "too_many_revocations", detail: `a host keeps at most ${MINCA_HOST_LIMITS.max_revocations_per_account} revoked keys per account` };
    }
    this.sql.exec("INSERT INTO revoked (did, at) VALUES (?, ?)", did, Date.now());
    return null;
  }

  private isRevoked(did: string): boolean {
    if (!this.schema.exists) return false;
    return this.sql.exec("SELECT 1 FROM revoked WHERE did = ?", did).toArray().length > 0;
  }

  /**
   * Keeps what one carry-space record says, with the key that signed it. Per key, the version
   * with the greater `at` wins (the account's own writers only); with `current` (a recount after
   * a revoke), this version is the one that counts now, whatever its `at`.
   */
  private async keep(rec: CarryRecord, v: Version, opts: { requestHost?: string; current: boolean }): Promise<CarryVerdict> {
    const account = this.meta("account")!;
    const newer = (held: { at: number } | undefined, at: number) => opts.current || !held || at >= held.at;
    switch (rec.kind) {
      case "refused":
        return { reason: rec.reason, detail: rec.detail };
      case "pass": {
        const held = this.sql.exec<{ at: number }>("SELECT at FROM passes WHERE space = ?", rec.space).toArray()[0];
        if (!held && this.count("passes") >= MINCA_HOST_LIMITS.max_spaces_per_account) {
          return { reason: "too_many_spaces", detail: `a host carries at most ${MINCA_HOST_LIMITS.max_spaces_per_account} spaces per account` };
        }
        if (!newer(held, rec.at)) return null;
        if (!(await this.space(rec.space).carry(rec.space, account, rec.constitution, rec.readKey ?? null, rec.at, rec.own))) {
          return { reason: "too_many_carriers", detail: `a host lets at most ${MINCA_HOST_LIMITS.max_carriers_per_space} accounts carry one space` };
        }
        this.sql.exec(
          `INSERT INTO passes (space, key, at, visibility, read_key, author, own) VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (space) DO UPDATE SET at = excluded.at, read_key = excluded.read_key, author = excluded.author, own = excluded.own`,
          rec.space,
          v.key,
          rec.at,
          rec.constitution.visibility,
          rec.readKey ?? null,
          v.author,
          rec.own ? 1 : 0,
        );
        return null;
      }
      case "pass_deleted": {
        const held = this.sql.exec<{ at: number }>("SELECT at FROM passes WHERE key = ?", rec.key).toArray()[0];
        if (held && newer(held, v.at)) await this.drop(PASS, rec.key);
        return null;
      }
      case "link": {
        const held = this.sql.exec<{ at: number; topic: string }>("SELECT at, topic FROM links WHERE key = ?", rec.key).toArray()[0];
        if (!newer(held, rec.at)) return null;
        if (!(await this.mailbox(rec.topic).linkAccount(rec.topic, account))) {
          return { reason: "too_many_link_accounts", detail: `a mailbox topic serves the links of at most ${MINCA_HOST_LIMITS.max_link_accounts_per_topic} accounts` };
        }
        this.sql.exec(
          `INSERT INTO links (key, topic, blob, until, at, written, author) VALUES (?, ?, ?, ?, ?, (SELECT COALESCE(MAX(written), 0) + 1 FROM links), ?)
           ON CONFLICT (key) DO UPDATE SET topic = excluded.topic, blob = excluded.blob, until = excluded.until, at = excluded.at, written = excluded.written, author = excluded.author`,
          rec.key,
          rec.topic,
          toArrayBuffer(rec.blob),
          rec.until,
          rec.at,
          v.author,
        );

        if (held && held.topic !== rec.topic) await this.unlinkIfNone(held.topic);
        await this.evictLinks();
        await this.schedule();
        return null;
      }
      case "link_deleted": {
        const held = this.sql.exec<{ at: number }>("SELECT at FROM links WHERE key = ?", rec.key).toArray()[0];
        if (held && newer(held, v.at)) await this.drop(LINK, rec.key);
        return null;
      }
      case "wake": {
        const held = this.sql.exec<{ at: number }>("SELECT at FROM wakes WHERE key = ?", rec.key).toArray()[0];
        if (!held && this.count("wakes") >= MINCA_WAKE_LIMITS.max_wakes_per_account) {
          return { reason: "too_many_wakes", detail: `a host keeps at most ${MINCA_WAKE_LIMITS.max_wakes_per_account} wakes per account` };
        }
        if (newer(held, v.at)) {
          this.sql.exec(
            "INSERT INTO wakes (key, at, body, author) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET at = excluded.at, body = excluded.body, author = excluded.author",
            rec.key,
            v.at,
            JSON.stringify(rec.wake),
            v.author,
          );
        }
        return null;
      }
      case "wake_deleted": {
        const held = this.sql.exec<{ at: number }>("SELECT at FROM wakes WHERE key = ?", rec.key).toArray()[0];
        if (held && newer(held, v.at)) await this.drop(WAKE, rec.key);
        return null;
      }
      case "receiver": {
        const endpoint = rec.receiver.push.endpoint;
        // DESIGN section 7's endpoint rule: a receiver the relay may not push to does not count, and
        // its version is refused (a recount sets again one that was accepted).
        const rule = opts.current ? ({ ok: true } as const) : checkPushEndpoint(endpoint, endpointPolicy(this.env, opts.requestHost));
        if (!rule.ok) return { reason: "invalid_receiver", detail: rule.reason };
        const held = this.sql.exec<{ at: number }>("SELECT at FROM receivers WHERE key = ?", rec.key).toArray()[0];
        if (!held && this.count("receivers") >= MINCA_WAKE_LIMITS.max_receivers_per_account) {
          return { reason: "too_many_receivers", detail: `a host keeps at most ${MINCA_WAKE_LIMITS.max_receivers_per_account} receivers per account` };
        }
        if (newer(held, v.at)) {
          // Written again: a receiver its push service had said was gone is pushed to again.
          this.sql.exec(
            `INSERT INTO receivers (key, at, device, endpoint, p256dh, auth, gone, author) VALUES (?, ?, ?, ?, ?, ?, 0, ?)
             ON CONFLICT (key) DO UPDATE SET at = excluded.at, device = excluded.device, endpoint = excluded.endpoint,
               p256dh = excluded.p256dh, auth = excluded.auth, gone = 0, author = excluded.author`,
            rec.key,
            v.at,
            rec.receiver.device,
            endpoint,
            rec.receiver.push.keys.p256dh,
            rec.receiver.push.keys.auth,
            v.author,
          );
        }
        return null;
      }
      case "receiver_deleted": {
        const held = this.sql.exec<{ at: number }>("SELECT at FROM receivers WHERE key = ?", rec.key).toArray()[0];
        if (held && newer(held, v.at)) await this.drop(RECEIVER, rec.key);
        return null;
      }
      default:
        return null;
    }
  }

  /** The record `collection`/`key` no longer counts: what the host kept for it goes. */
  private async drop(collection: string, key: string): Promise<void> {
    const account = this.meta("account")!;
    switch (collection) {
      case PASS: {
        const held = this.sql.exec<{ space: string }>("SELECT space FROM passes WHERE key = ?", key).toArray()[0];
        if (!held) return;
        this.sql.exec("DELETE FROM passes WHERE space = ?", held.space);
        this.sql.exec("DELETE FROM usage WHERE space = ?", held.space);
        await this.space(held.space).uncarry(account);
        return;
      }
      case LINK: {
        const held = this.sql.exec<{ topic: string }>("SELECT topic FROM links WHERE key = ?", key).toArray()[0];
        if (!held) return;
        this.sql.exec("DELETE FROM links WHERE key = ?", key);
        await this.unlinkIfNone(held.topic);
        return;
      }
      case WAKE:
        this.sql.exec("DELETE FROM wakes WHERE key = ?", key);
        return;
      case RECEIVER:
        if (this.sql.exec("DELETE FROM receivers WHERE key = ?", key).rowsWritten > 0) this.sql.exec("DELETE FROM pushes WHERE receiver = ?", key);
        return;
    }
  }

  private carryBodyKey(space: string): Uint8Array | null {
    const keyB64 = this.meta("carry_key");
    if (space !== this.meta("carry_space") || keyB64 === null) return null;
    return bodyKeyOf(base64urlDecode(keyB64));
  }

  // ---- bounds (called by MincaSpace) ----------------------------------------------------------

  /**
   * Charges `versions` and `bytes` written to `space` to this account when its carried spaces'
   * total bound leaves room for them: the check and the write in one step, with no await
   * between, so concurrent requests never take the account past its quota. False when over.
   */
  reserve(space: string, versions: number, bytes: number): boolean {
    if (!this.schema.exists) return bytes <= MINCA_HOST_LIMITS.max_account_bytes; // not carrying: nothing to count
    const used = this.sql.exec<{ b: number }>("SELECT COALESCE(SUM(bytes), 0) AS b FROM usage").one().b;
    if (used + bytes > MINCA_HOST_LIMITS.max_account_bytes) return false;
    if (this.meta("carry_space") === null) return true; // not carrying (closed meanwhile): nothing to count
    this.sql.exec(
      `INSERT INTO usage (space, versions, bytes) VALUES (?, ?, ?)
       ON CONFLICT (space) DO UPDATE SET versions = versions + excluded.versions, bytes = bytes + excluded.bytes`,
      space,
      versions,
      bytes,
    );
    return true;
  }

  /** Gives back what reserve() charged for versions that were not kept. */
  refund(space: string, versions: number, bytes: number): void {
    if (!this.schema.exists) return;
    this.sql.exec("UPDATE usage SET versions = MAX(0, versions - ?), bytes = MAX(0, bytes - ?) WHERE space = ?", versions, bytes, space);
  }

  // ---- links (called by MincaMailbox) ---------------------------------------------------------

  /**
   * The account's links of `topic` a mailbox fetch is answered with (seed §4.2): among its 64
   * most recently written live links, those whose topic (computed from the blob) is `topic`.
   */
  linksFor(topic: string): Array<{ blob: Uint8Array; until: number; at: number }> {
    if (!this.schema.exists) return [];
    return this.sql
      .exec<LinkRow>(
        `SELECT key, topic, blob, until, at FROM (
           SELECT * FROM links WHERE until > ? ORDER BY written DESC LIMIT ?)
         WHERE topic = ? ORDER BY written`,
        nowSeconds(),
        MINCA_HOST_LIMITS.links_served_per_account,
        topic,
      )
      .toArray()
      .map((r) => ({ blob: new Uint8Array(r.blob), until: r.until, at: Math.floor(r.at / 1000) }));
  }

  // ---- wakes (DESIGN 8.5) ---------------------------------------------------------------------

  /**
   * New versions were stored (and answered) in a space the account carries: each that wakes one
   * of its wakes queues one push per live receiver; the alarm sends them. A version that wakes
   * nothing queues nothing, so it costs no outbound request.
   */
  async arrived(_space: string, arrivals: Array<{ arrival: Arrival; raw: string }>): Promise<void> {
    const account = this.meta("account");
    if (account === null || this.meta("carry_space") === null) return;
    const wakes = this.sql.exec<{ body: string }>("SELECT body FROM wakes").toArray().map((r) => JSON.parse(r.body) as WakeBody);
    if (wakes.length === 0) return;
    const receivers = this.sql.exec<{ key: string; endpoint: string }>("SELECT key, endpoint FROM receivers WHERE gone = 0").toArray();
    if (receivers.length === 0) return;
    const now = Date.now();
    let queued = 0;
    this.ctx.storage.transactionSync(() => {
      for (const { arrival, raw } of arrivals) {
        if (!wakes.some((w) => wakeMatches(w, arrival, account))) continue;
        const payload = toArrayBuffer(wakePayload(raw, arrival));
        const topic = wakeTopic(arrival.id);
        for (const r of receivers) {
          this.sql.exec("INSERT INTO pushes (receiver, endpoint, payload, topic, next_at) VALUES (?, ?, ?, ?, ?)", r.key, r.endpoint, payload, topic, now);
          queued++;
        }
      }
      if (queued > 0) {
        this.sql.exec(
          "DELETE FROM pushes WHERE id IN (SELECT id FROM pushes ORDER BY id DESC LIMIT -1 OFFSET ?)",
          MINCA_WAKE_LIMITS.max_pending_pushes,
        );
      }
    });
    if (queued > 0) await this.schedule();
  }

  // ---- alarm: expired links, pushes due -------------------------------------------------------

  async alarm(): Promise<void> {
    if (!this.schema.exists) return;
    await this.expireBinding();
    if (!this.schema.exists) return;
    const expired = this.sql.exec<{ key: string; topic: string }>("SELECT key, topic FROM links WHERE until <= ?", nowSeconds()).toArray();
    this.sql.exec("DELETE FROM links WHERE until <= ?", nowSeconds());
    for (const topic of new Set(expired.map((e) => e.topic))) await this.unlinkIfNone(topic);
    await this.sendDue();
    await this.schedule();
  }

  /** Sends the pushes due, within this minute's budget (pushes_per_minute). */
  private async sendDue(): Promise<void> {
    const now = Date.now();
    const minute = Math.floor(now / 60_000);
    const sent = this.meta("push_minute") === String(minute) ? Number(this.meta("push_count") ?? 0) : 0;
    const budget = MINCA_WAKE_LIMITS.pushes_per_minute - sent;
    if (budget <= 0) return;
    const due = this.sql
      .exec<PushRow>(
        `SELECT p.id, p.receiver, p.endpoint, p.payload, p.topic, p.attempts, r.p256dh, r.auth
           FROM pushes p JOIN receivers r ON r.key = p.receiver AND r.endpoint = p.endpoint AND r.gone = 0
          WHERE p.next_at <= ? ORDER BY p.next_at, p.id LIMIT ?`,
        now,
        budget,
      )
      .toArray();
    // pushes to receivers removed, replaced or gone meanwhile
    this.sql.exec(
      `DELETE FROM pushes WHERE NOT EXISTS (
         SELECT 1 FROM receivers r WHERE r.key = pushes.receiver AND r.endpoint = pushes.endpoint AND r.gone = 0)`,
    );
    if (due.length === 0) return;
    this.setMeta("push_minute", String(minute));
    this.setMeta("push_count", String(sent + due.length));
    let sender: WebPushSender;
    try {
      sender = await this.pushSender();
    } catch (err) {
      log.error("minca account: no VAPID keys, wakes wait", { err });
      return;
    }
    // DESIGN section 7 again: a receiver the rule does not allow (written before it, or under a
    // PUSH_ENDPOINT_ALLOW since removed) does not count: it is not pushed to until written again.
    const policy = endpointPolicy(this.env);
    const allowed = due.filter((p) => {
      if (checkPushEndpoint(p.endpoint, policy).ok) return true;
      this.sql.exec("UPDATE receivers SET gone = 1 WHERE key = ? AND endpoint = ?", p.receiver, p.endpoint);
      this.sql.exec("DELETE FROM pushes WHERE receiver = ? AND endpoint = ?", p.receiver, p.endpoint);
      return false;
    });
    // A push that crashed the relay as often as it may be tried is not tried again.
    const live = allowed.filter((p) => p.attempts < MINCA_WAKE_LIMITS.push_max_attempts || void this.sql.exec("DELETE FROM pushes WHERE id = ?", p.id));
    // The relay-wide rate per push-service origin: what is over it waits, costing no try.
    const { go, wait } = await admitPushes(this.env, live, (p) => p.endpoint, MINCA_WAKE_LIMITS.push_retry_base_seconds * 1000);
    for (const { item, at } of wait) this.sql.exec("UPDATE pushes SET next_at = ? WHERE id = ?", at, item.id);
    // Each try is counted, and its retry time set, before it is made (a send that takes the relay
    // down cannot be retried forever by the alarm after each restart).
    for (const p of go) {
      this.sql.exec("UPDATE pushes SET attempts = ?, next_at = ? WHERE id = ?", p.attempts + 1, Date.now() + this.retryDelay(p.attempts + 1, undefined) * 1000, p.id);
    }
    await Promise.all(
      go.map(async (p) => {
        let outcome: PushOutcome;
        try {
          outcome = await sender.send({ endpoint: p.endpoint, keys: { p256dh: p.p256dh, auth: p.auth } }, new Uint8Array(p.payload), {
            ttl: MINCA_WAKE_LIMITS.push_ttl_seconds,
            urgency: "normal",
            topic: p.topic,
          });
        } catch (err) {
          log.error("minca account: a wake could not be built", { err });
          return void this.sql.exec("DELETE FROM pushes WHERE id = ?", p.id);
        }
        this.settle(p, outcome);
      }),
    );
  }

  /** Acts on a push service's answer as the Web Push sender says (RFC 8030 §5, DESIGN 8.5). */
  private settle(p: PushRow, outcome: PushOutcome): void {
    if (outcome.kind === "retry") {
      const attempts = p.attempts + 1;
      if (attempts < MINCA_WAKE_LIMITS.push_max_attempts) {
        const delay = this.retryDelay(attempts, outcome.retryAfterSeconds);
        this.sql.exec("UPDATE pushes SET attempts = ?, next_at = ? WHERE id = ?", attempts, Date.now() + delay * 1000, p.id);
        return;
      }
      log.warn(`minca account: a wake was dropped after ${attempts} tries (last ${outcome.status})`);
    } else if (outcome.kind === "gone") {
      // Deletes nothing of the account's records: the receiver is not pushed to until it is written again.
      this.sql.exec("UPDATE receivers SET gone = 1 WHERE key = ? AND endpoint = ?", p.receiver, p.endpoint);
      this.sql.exec("DELETE FROM pushes WHERE receiver = ? AND endpoint = ?", p.receiver, p.endpoint);
    } else if (outcome.kind === "rejected") {
      log.error("minca account: a push service refused a wake", { origin: originOf(p.endpoint), status: outcome.status, answer: outcome.detail });
    }
    this.sql.exec("DELETE FROM pushes WHERE id = ?", p.id);
  }

  private retryDelay(attempts: number, retryAfterSeconds: number | undefined): number {
    return retryDelaySeconds(attempts, retryAfterSeconds, {
      baseSeconds: MINCA_WAKE_LIMITS.push_retry_base_seconds,
      maxSeconds: MINCA_WAKE_LIMITS.push_retry_max_seconds,
      retryAfterMaxSeconds: MINCA_WAKE_LIMITS.push_retry_after_max_seconds,
    });
  }

  private async pushSender(): Promise<WebPushSender> {
    this.sender ??= await relayPushSender(this.env, (url, init) => this.pushFetch(url, init));
    return this.sender;
  }

  // ---- internals ------------------------------------------------------------------------------

  /** carry:closed: stop carrying for the account and forget everything held for it. */
  private async close(): Promise<void> {
    const account = this.meta("account")!;
    const carry = this.meta("carry_space");
    const key = this.meta("carry_key");
    const readKey = key === null ? null : readKeyDid(readSeedOf(base64urlDecode(key)));
    for (const { space } of this.sql.exec<{ space: string }>("SELECT space FROM passes").toArray()) await this.space(space).uncarry(account);
    for (const { topic } of this.sql.exec<{ topic: string }>("SELECT DISTINCT topic FROM links").toArray()) {
      await this.mailbox(topic).unlinkAccount(topic, account);
    }
    this.ctx.storage.transactionSync(() => {
      for (const t of ["passes", "links", "usage", "wakes", "receivers", "pushes", "revoked", "meta"]) this.sql.exec(`DELETE FROM ${t}`);
      this.ownAccount.reset();
      this.sql.exec("DELETE FROM sqlite_sequence");
      this.setMeta("closed_at", String(Date.now()));
      if (carry !== null) this.setMeta("closed_space", carry);
      if (readKey !== null) this.setMeta("closed_read_key", readKey);
    });
    await this.ctx.storage.deleteAlarm();
  }

  /** Keeps at most max_links_per_account links: the least recently written go first. */
  private async evictLinks(): Promise<void> {
    const over = this.sql
      .exec<{ key: string; topic: string }>("SELECT key, topic FROM links ORDER BY written DESC LIMIT -1 OFFSET ?", MINCA_HOST_LIMITS.max_links_per_account)
      .toArray();
    for (const o of over) this.sql.exec("DELETE FROM links WHERE key = ?", o.key);
    for (const topic of new Set(over.map((o) => o.topic))) await this.unlinkIfNone(topic);
  }

  private async unlinkIfNone(topic: string): Promise<void> {
    const left = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM links WHERE topic = ?", topic).one().n;
    if (left === 0) await this.mailbox(topic).unlinkAccount(topic, this.meta("account")!);
  }

  /** The alarm fires at the next link expiry or the next push due (the next minute when this one's budget is spent). */
  private async schedule(): Promise<void> {
    const until = this.sql.exec<{ t: number | null }>("SELECT MIN(until) AS t FROM links").one().t;
    let push = this.sql.exec<{ t: number | null }>("SELECT MIN(next_at) AS t FROM pushes").one().t;
    const minute = Math.floor(Date.now() / 60_000);
    if (push !== null && this.meta("push_minute") === String(minute) && Number(this.meta("push_count")) >= MINCA_WAKE_LIMITS.pushes_per_minute) {
      push = Math.max(push, (minute + 1) * 60_000);
    }
    const boundAt = this.meta("bound_at");
    const binding = boundAt === null || this.meta("carry_space") === null ? null : bindingExpiry({ boundAt: Number(boundAt), proven: this.proven() });
    const times = [until === null ? null : until * 1000, push, binding].filter((t): t is number => t !== null);
    if (times.length === 0) return void (await this.ctx.storage.deleteAlarm());
    await this.ctx.storage.setAlarm(Math.min(...times));
  }

  private count(table: string): number {
    if (!this.schema.exists) return 0;
    return this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).one().n;
  }

  private remember(account: string): void {
    this.ownAccount.claim(account);
  }

  private space(id: string) {
    return this.env.MINCA_SPACE.get(this.env.MINCA_SPACE.idFromName(id));
  }

  private mailbox(topic: string) {
    return this.env.MINCA_MAILBOX.get(this.env.MINCA_MAILBOX.idFromName(topic));
  }

  private meta(key: string): string | null {
    if (!this.schema.exists) return null;
    return this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0]?.value ?? null;
  }

  private setMeta(key: string, value: string): void {
    this.schema.ensure();
    this.sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value);
  }
}

function originOf(endpoint: string): string {
  try {
    return new URL(endpoint).origin;
  } catch {
    return "?";
  }
}

function toArrayBuffer(b: Uint8Array): ArrayBuffer {
  return b.slice().buffer as ArrayBuffer;
}

