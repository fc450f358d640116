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
import { readCarryRecord, type CarryStart, type WakeBody } from "../shared/minca/carry";
import { wakeMatches, wakePayload, wakeTopic, type Arrival } from "../shared/minca/wake";
import { checkPushEndpoint, endpointPolicy } from "../shared/webpush/endpoint";
import { retryDelaySeconds, WebPushSender, type FetchLike, type PushOutcome } from "../shared/webpush/send";
import { relayPushSender } from "./relay-keys";
import { admitPushes } from "./push-gate";
import { bodyKeyOf } from "../shared/minca/space";
import type { Version, VersionRefusal } from "../shared/minca/version";
import { log } from "../shared/log";

export interface AccountStatus {
  account: string;
  name: string | null;
  carry_space: string;
  spaces: number;
  links: number;
  wakes: number;
  receivers: number;
  versions: number;
  bytes: number;
}

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
   * space again changes nothing; a closed one is refused (410). Another carry space replaces the
   * current one only while the account has written nothing the host accepted in it (so a grant
   * anyone can post never takes over an account in use): else 409.
   */
  async startCarrying(start: CarryStart): Promise<HostResult<{ account: string; carry_space: string }>> {
    this.remember(start.account);
    if (this.meta("closed_space") === start.carrySpace) return fail(410, "carry_closed", "the account closed this carry space (carry:closed)");
    const current = this.meta("carry_space");
    if (current === start.carrySpace) return { ok: true, value: { account: start.account, carry_space: current } };
    if (current !== null) {
      if (this.meta("claimed") !== null) return fail(409, "carry_space_conflict", "this host already carries the account through another carry space");
      await this.space(current).forget();
    }
    await this.space(start.carrySpace).openCarry(start.carrySpace, start.account, start.constitution);
    this.schema.ensure();
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("DELETE FROM meta WHERE key IN ('closed_at', 'closed_space', 'claimed')");
      this.setMeta("carry_space", start.carrySpace);
      this.setMeta("carry_key", base64urlEncode(start.key));
      if (start.name !== undefined) this.setMeta("name", start.name);
    });
    return { ok: true, value: { account: start.account, carry_space: start.carrySpace } };
  }

  /** What the host holds for the account (GET /minca/v1/host/accounts/<did>). */
  async status(account: string): Promise<HostResult<AccountStatus>> {
    if (this.meta("closed_at") !== null && this.meta("carry_space") === null) {
      return fail(410, "carry_closed", "the account closed its carry space: the host holds nothing for it");
    }
    const carry = this.meta("carry_space");
    if (carry === null || this.meta("account") !== account) return fail(404, "not_found", "this host does not carry for that account");
    const count = (table: string) => this.count(table);
    const used = this.sql.exec<{ v: number; b: number }>("SELECT COALESCE(SUM(versions), 0) AS v, COALESCE(SUM(bytes), 0) AS b FROM usage").one();
    return {
      ok: true,
      value: {
        account,
        name: this.meta("name"),
        carry_space: carry,
        spaces: count("passes"),
        links: count("links"),
        wakes: count("wakes"),
        receivers: count("receivers"),
        versions: used.v,
        bytes: used.b,
      },
    };
  }

  // ---- the carry space's records (called by the carry space's MincaSpace) ---------------------

  /**
   * Reads each accepted version of the carry space (in order) and keeps what it says: one verdict
   * per version, null when it is taken (a refused one is not stored in the log either).
   * `closed` once carry:closed was read: everything is forgotten, and the rest is moot.
   */
  async applyCarry(space: string, versions: Version[], opts: { requestHost?: string } = {}): Promise<{ verdicts: CarryVerdict[]; closed: boolean }> {
    const verdicts: CarryVerdict[] = [];
    const keyB64 = this.meta("carry_key");
    if (space !== this.meta("carry_space") || keyB64 === null) {
      return { verdicts: versions.map(() => ({ reason: "unreadable_record", detail: "not this account's carry space" })), closed: false };
    }
    const bodyKey = bodyKeyOf(base64urlDecode(keyB64));
    const account = this.meta("account")!;
    for (const v of versions) {
      const rec = readCarryRecord(v, bodyKey);
      switch (rec.kind) {
        case "refused":
          verdicts.push({ reason: rec.reason, detail: rec.detail });
          continue;
        case "closed":
          await this.close();
          return { verdicts: [...verdicts, ...versions.slice(verdicts.length).map(() => null)], closed: true };
        case "pass": {
          const held = this.sql.exec<{ at: number }>("SELECT at FROM passes WHERE space = ?", rec.space).toArray()[0];
          if (!held) {
            const n = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM passes").one().n;
            if (n >= MINCA_HOST_LIMITS.max_spaces_per_account) {
              verdicts.push({ reason: "too_many_spaces", detail: `a host carries at most ${MINCA_HOST_LIMITS.max_spaces_per_account} spaces per account` });
              continue;
            }
          }
          if (!held || rec.at >= held.at) {
            await this.space(rec.space).carry(rec.space, account, rec.constitution, rec.readKey ?? null, rec.at);
            this.sql.exec(
              `INSERT INTO passes (space, key, at, visibility, read_key) VALUES (?, ?, ?, ?, ?)
               ON CONFLICT (space) DO UPDATE SET at = excluded.at, read_key = excluded.read_key`,
              rec.space,
              v.key,
              rec.at,
              rec.constitution.visibility,
              rec.readKey ?? null,
            );
          }
          break;
        }
        case "pass_deleted": {
          const held = this.sql.exec<{ space: string; at: number }>("SELECT space, at FROM passes WHERE key = ?", rec.key).toArray()[0];
          if (held && v.at >= held.at) {
            this.sql.exec("DELETE FROM passes WHERE space = ?", held.space);
            this.sql.exec("DELETE FROM usage WHERE space = ?", held.space);
            await this.space(held.space).uncarry(account);
          }
          break;
        }
        case "link": {
          const held = this.sql.exec<{ at: number; topic: string }>("SELECT at, topic FROM links WHERE key = ?", rec.key).toArray()[0];
          if (held && rec.at < held.at) break;
          this.sql.exec(
            `INSERT INTO links (key, topic, blob, until, at, written) VALUES (?, ?, ?, ?, ?, (SELECT COALESCE(MAX(written), 0) + 1 FROM links))
             ON CONFLICT (key) DO UPDATE SET topic = excluded.topic, blob = excluded.blob, until = excluded.until, at = excluded.at, written = excluded.written`,
            rec.key,
            rec.topic,
            toArrayBuffer(rec.blob),
            rec.until,
            rec.at,
          );
          await this.mailbox(rec.topic).linkAccount(rec.topic, account);
          if (held && held.topic !== rec.topic) await this.unlinkIfNone(held.topic);
          await this.evictLinks();
          await this.schedule();
          break;
        }
        case "link_deleted": {
          const held = this.sql.exec<{ at: number; topic: string }>("SELECT at, topic FROM links WHERE key = ?", rec.key).toArray()[0];
          if (held && v.at >= held.at) {
            this.sql.exec("DELETE FROM links WHERE key = ?", rec.key);
            await this.unlinkIfNone(held.topic);
          }
          break;
        }
        case "wake": {
          const held = this.sql.exec<{ at: number }>("SELECT at FROM wakes WHERE key = ?", rec.key).toArray()[0];
          if (!held && this.count("wakes") >= MINCA_WAKE_LIMITS.max_wakes_per_account) {
            verdicts.push({ reason: "too_many_wakes", detail: `a host keeps at most ${MINCA_WAKE_LIMITS.max_wakes_per_account} wakes per account` });
            continue;
          }
          if (!held || v.at >= held.at) {
            this.sql.exec(
              "INSERT INTO wakes (key, at, body) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET at = excluded.at, body = excluded.body",
              rec.key,
              v.at,
              JSON.stringify(rec.wake),
            );
          }
          break;
        }
        case "wake_deleted":
          this.sql.exec("DELETE FROM wakes WHERE key = ? AND at <= ?", rec.key, v.at);
          break;
        case "receiver": {
          const endpoint = rec.receiver.push.endpoint;
          // DESIGN section 7's endpoint rule: a receiver the relay may not push to does not count, and its version is refused.
          const rule = checkPushEndpoint(endpoint, endpointPolicy(this.env, opts.requestHost));
          if (!rule.ok) {
            verdicts.push({ reason: "invalid_receiver", detail: rule.reason });
            continue;
          }
          const held = this.sql.exec<{ at: number }>("SELECT at FROM receivers WHERE key = ?", rec.key).toArray()[0];
          if (!held && this.count("receivers") >= MINCA_WAKE_LIMITS.max_receivers_per_account) {
            verdicts.push({ reason: "too_many_receivers", detail: `a host keeps at most ${MINCA_WAKE_LIMITS.max_receivers_per_account} receivers per account` });
            continue;
          }
          if (!held || v.at >= held.at) {
            // Written again: a receiver its push service had said was gone is pushed to again.
            this.sql.exec(
              `INSERT INTO receivers (key, at, device, endpoint, p256dh, auth, gone) VALUES (?, ?, ?, ?, ?, ?, 0)
               ON CONFLICT (key) DO UPDATE SET at = excluded.at, device = excluded.device, endpoint = excluded.endpoint,
                 p256dh = excluded.p256dh, auth = excluded.auth, gone = 0`,
              rec.key,
              v.at,
              rec.receiver.device,
              endpoint,
              rec.receiver.push.keys.p256dh,
              rec.receiver.push.keys.auth,
            );
          }
          break;
        }
        case "receiver_deleted":
          if (this.sql.exec("DELETE FROM receivers WHERE key = ? AND at <= ?", rec.key, v.at).rowsWritten > 0) {
            this.sql.exec("DELETE FROM pushes WHERE receiver = ?", rec.key);
          }
          break;
        default:
          break;
      }
      this.setMeta("claimed", "1");
      verdicts.push(null);
    }
    return { verdicts, closed: false };
  }

  // ---- bounds (called by MincaSpace) ----------------------------------------------------------

  /** Bytes the account may still add to `space` (its carried spaces' total bound). */
  room(_space: string): number {
    if (!this.schema.exists) return MINCA_HOST_LIMITS.max_account_bytes;
    const used = this.sql.exec<{ b: number }>("SELECT COALESCE(SUM(bytes), 0) AS b FROM usage").one().b;
    return MINCA_HOST_LIMITS.max_account_bytes - used;
  }

  charge(space: string, versions: number, bytes: number): void {
    if (this.meta("carry_space") === null) return;
    this.sql.exec(
      `INSERT INTO usage (space, versions, bytes) VALUES (?, ?, ?)
       ON CONFLICT (space) DO UPDATE SET versions = versions + excluded.versions, bytes = bytes + excluded.bytes`,
      space,
      versions,
      bytes,
    );
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
    for (const { space } of this.sql.exec<{ space: string }>("SELECT space FROM passes").toArray()) await this.space(space).uncarry(account);
    for (const { topic } of this.sql.exec<{ topic: string }>("SELECT DISTINCT topic FROM links").toArray()) {
      await this.mailbox(topic).unlinkAccount(topic, account);
    }
    this.ctx.storage.transactionSync(() => {
      for (const t of ["passes", "links", "usage", "wakes", "receivers", "pushes", "meta"]) this.sql.exec(`DELETE FROM ${t}`);
      this.ownAccount.reset();
      this.sql.exec("DELETE FROM sqlite_sequence");
      this.setMeta("closed_at", String(Date.now()));
      if (carry !== null) this.setMeta("closed_space", carry);
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
    const times = [until === null ? null : until * 1000, push].filter((t): t is number => t !== null);
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

