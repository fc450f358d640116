// An account's wakes as pushes (DESIGN 8.5): a new version that wakes one of the account's wakes
// queues one push per live receiver (the `pushes` table), and the account's alarm sends what is
// due within the per-minute budget, through the relay-wide gate per push-service origin, acting
// on each push service's answer (RFC 8030 §5). Each try is counted before it is made.
import { toArrayBuffer } from "../../shared/encoding";
import type { AccountStore } from "./account-store";
import { relayPushSender } from "../relay/relay-keys";
import { admitPushes } from "../push/push-gate";
import { MINCA_WAKE_LIMITS } from "../../shared/limits";
import type { WakeBody } from "../../shared/minca/carry";
import { WAKE_RETRY, wakeMatches, wakePayload, wakeTopic, type Arrival } from "../../shared/minca/wake";
import { checkPushEndpoint, endpointOrigin, endpointPolicy } from "../../shared/webpush/endpoint";
import { retryDelaySeconds, type WebPushSender, type FetchLike, type PushOutcome } from "../../shared/webpush/send";
import { log } from "../../shared/log";

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

export class AccountPushes {
  private sender: WebPushSender | undefined;

  constructor(
    private readonly store: AccountStore,
    private readonly env: Env,
    /** The fetch pushes go out with (read at each send, so tests may replace it). */
    private readonly fetch: FetchLike,
  ) {}

  private get sql(): SqlStorage {
    return this.store.sql;
  }

  /**
   * Queues one push per live receiver for each arrival that wakes one of the account's wakes;
   * the number queued (0: nothing to send, no outbound request). Past max_pending_pushes the
   * oldest are dropped.
   */
  queue(account: string, arrivals: Array<{ arrival: Arrival; raw: string }>): number {
    const wakes = this.sql.exec<{ body: string }>("SELECT body FROM wakes").toArray().map((r) => JSON.parse(r.body) as WakeBody);
    if (wakes.length === 0) return 0;
    const receivers = this.sql.exec<{ key: string; endpoint: string }>("SELECT key, endpoint FROM receivers WHERE gone = 0").toArray();
    if (receivers.length === 0) return 0;
    const now = Date.now();
    let queued = 0;
    this.store.ctx.storage.transactionSync(() => {
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
    return queued;
  }

  /** When the next push is due (the next minute when this one's budget is spent), or null. */
  nextDue(): number | null {
    let push = this.sql.exec<{ t: number | null }>("SELECT MIN(next_at) AS t FROM pushes").one().t;
    const minute = Math.floor(Date.now() / 60_000);
    if (push !== null && this.store.meta("push_minute") === String(minute) && Number(this.store.meta("push_count")) >= MINCA_WAKE_LIMITS.pushes_per_minute) {
      push = Math.max(push, (minute + 1) * 60_000);
    }
    return push;
  }

  /** Sends the pushes due, within this minute's budget (pushes_per_minute). */
  async sendDue(): Promise<void> {
    const now = Date.now();
    const minute = Math.floor(now / 60_000);
    const sent = this.store.meta("push_minute") === String(minute) ? Number(this.store.meta("push_count") ?? 0) : 0;
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
    this.store.setMeta("push_minute", String(minute));
    this.store.setMeta("push_count", String(sent + due.length));
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
      this.sql.exec("UPDATE pushes SET attempts = ?, next_at = ? WHERE id = ?", p.attempts + 1, Date.now() + retryDelaySeconds(p.attempts + 1, undefined, WAKE_RETRY) * 1000, p.id);
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
        const delay = retryDelaySeconds(attempts, outcome.retryAfterSeconds, WAKE_RETRY);
        this.sql.exec("UPDATE pushes SET attempts = ?, next_at = ? WHERE id = ?", attempts, Date.now() + delay * 1000, p.id);
        return;
      }
      log.warn(`minca account: a wake was dropped after ${attempts} tries (last ${outcome.status})`);
    } else if (outcome.kind === "gone") {
      // Deletes nothing of the account's records: the receiver is not pushed to until it is written again.
      this.sql.exec("UPDATE receivers SET gone = 1 WHERE key = ? AND endpoint = ?", p.receiver, p.endpoint);
      this.sql.exec("DELETE FROM pushes WHERE receiver = ? AND endpoint = ?", p.receiver, p.endpoint);
    } else if (outcome.kind === "rejected") {
      log.error("minca account: a push service refused a wake", { origin: endpointOrigin(p.endpoint), status: outcome.status, answer: outcome.detail });
    }
    this.sql.exec("DELETE FROM pushes WHERE id = ?", p.id);
  }

  private async pushSender(): Promise<WebPushSender> {
    this.sender ??= await relayPushSender(this.env, this.fetch);
    return this.sender;
  }
}
