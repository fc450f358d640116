// A mailbox's wakes (DESIGN section 7, seed 002 §4.4): one `deliveries` row per receiver and new
// item, written with the item (minca-mailbox.ts) and sent here by the mailbox's alarm, through the
// relay-wide gate per push-service origin, acting on each push service's answer (RFC 8030 §5,
// RFC 8292 §4). Each try is counted, and its retry time set, before it is made, so a send that
// takes the relay down with it is bounded by push_max_attempts across restarts.
import { relayPushSender } from "../relay/relay-keys";
import { admitPushes } from "../push/push-gate";
import type { StatsReporter } from "../relay/relay-stats";
import { MAILBOX_LIMITS } from "../../shared/limits";
import { wakeBody } from "../../shared/mailbox/messages";
import { wakePushTopic } from "../../shared/mailbox/topic";
import { checkPushEndpoint, endpointOrigin, endpointPolicy } from "../../shared/webpush/endpoint";
import { retryDelaySeconds, WebPushSender, type FetchLike, type PushOutcome } from "../../shared/webpush/send";
import { log } from "../../shared/log";

interface DueRow extends Record<string, SqlStorageValue> {
  receiver_id: string;
  seq: number;
  attempts: number;
  endpoint: string;
  p256dh: string;
  auth: string;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

export class MailboxWakes {
  private readonly sql: SqlStorage;
  private sender: WebPushSender | undefined;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    private readonly stats: StatsReporter,
    /** The fetch wakes go out with (read at each send, so tests may replace it). */
    private readonly fetch: FetchLike,
  ) {
    this.sql = ctx.storage.sql;
  }

  /** Sends the wakes due at `now` (at most push_batch) of the mailbox serving `topic` (null: unknown, dropped). */
  async sendDue(topic: string | null, now: number): Promise<void> {
    const due = this.sql
      .exec<DueRow>(
        `SELECT d.receiver_id, d.seq, d.attempts, r.endpoint, r.p256dh, r.auth
           FROM deliveries d JOIN receivers r ON r.id = d.receiver_id
          WHERE d.next_at <= ? ORDER BY d.next_at, d.seq LIMIT ?`,
        now,
        MAILBOX_LIMITS.push_batch,
      )
      .toArray();
    if (due.length > 0) await this.send(topic, due);
  }

  /** When the next wake is due (ms), or null. */
  nextDue(): number | null {
    return this.sql.exec<{ t: number | null }>("SELECT MIN(next_at) AS t FROM deliveries").one().t;
  }

  /** Forgets a receiver and the wakes still to send to it; whether it was there. */
  forgetReceiver(id: string): boolean {
    return this.ctx.storage.transactionSync(() => {
      this.sql.exec("DELETE FROM deliveries WHERE receiver_id = ?", id);
      return this.sql.exec("DELETE FROM receivers WHERE id = ?", id).rowsWritten > 0;
    });
  }

  private async send(topic: string | null, due: DueRow[]): Promise<void> {
    let sender: WebPushSender;
    try {
      sender = await this.pushSender();
    } catch (err) {
      log.error("mailbox: no VAPID keys, wakes wait", { err });
      const later = Date.now() + MAILBOX_LIMITS.push_retry_base_seconds * 1000;
      for (const d of due) this.sql.exec("UPDATE deliveries SET next_at = ? WHERE receiver_id = ? AND seq = ?", later, d.receiver_id, d.seq);
      return;
    }
    // DESIGN section 7 again: a receiver the rule does not allow (stored before it, or under a
    // PUSH_ENDPOINT_ALLOW since removed) is forgotten, not pushed to.
    const policy = endpointPolicy(this.env);
    const allowed = due.filter((d) => {
      if (checkPushEndpoint(d.endpoint, policy).ok) return true;
      log.warn("mailbox: a receiver's endpoint fails the push-endpoint rule; forgotten", { origin: endpointOrigin(d.endpoint) });
      this.forgetReceiver(d.receiver_id);
      return false;
    });
    // A delivery that crashed the relay as often as it may be tried is not tried again.
    const live = allowed.filter((d) => d.attempts < MAILBOX_LIMITS.push_max_attempts || void this.drop(d));
    // The relay-wide rate per push-service origin: what is over it waits, costing no try.
    const { go, wait } = await admitPushes(this.env, live, (d) => d.endpoint, MAILBOX_LIMITS.push_retry_base_seconds * 1000);
    for (const { item: d, at } of wait) this.sql.exec("UPDATE deliveries SET next_at = ? WHERE receiver_id = ? AND seq = ?", at, d.receiver_id, d.seq);
    // Each try is counted, and its retry time set, before it is made.
    for (const d of go) {
      this.sql.exec(
        "UPDATE deliveries SET attempts = ?, next_at = ? WHERE receiver_id = ? AND seq = ?",
        d.attempts + 1,
        Date.now() + retryDelay(d.attempts + 1, undefined) * 1000,
        d.receiver_id,
        d.seq,
      );
    }
    await Promise.all(
      go.map(async (d) => {
        const item = this.sql
          .exec<{ until: number; blob: ArrayBuffer }>("SELECT until, blob FROM items WHERE seq = ? AND until > ?", d.seq, nowSeconds())
          .toArray()[0];
        if (!item || topic === null) return this.drop(d);
        let outcome: PushOutcome;
        try {
          outcome = await sender.send(
            { endpoint: d.endpoint, keys: { p256dh: d.p256dh, auth: d.auth } },
            wakeBody(topic, d.seq, new Uint8Array(item.blob)),
            { ttl: Math.max(0, item.until - nowSeconds()), urgency: "normal", topic: wakePushTopic(topic) },
          );
        } catch (err) {
          // Keys are checked when a receiver registers, so this is corrupt state: retrying cannot help.
          log.error("mailbox: wake could not be built", { err });
          return this.drop(d);
        }
        this.settle(d, outcome);
      }),
    );
  }

  /** Acts on a push service's answer (DESIGN section 7; RFC 8030 §5, RFC 8292 §4). */
  private settle(d: DueRow, outcome: PushOutcome): void {
    switch (outcome.kind) {
      case "delivered":
        this.stats.count("deliveries");
        return this.drop(d);
      case "gone":
        // Only the receiver we sent to: one re-registered under another endpoint stays.
        this.ctx.storage.transactionSync(() => {
          const hit = this.sql.exec("DELETE FROM receivers WHERE id = ? AND endpoint = ?", d.receiver_id, d.endpoint).rowsWritten;
          if (hit > 0) this.sql.exec("DELETE FROM deliveries WHERE receiver_id = ?", d.receiver_id);
          else this.drop(d);
        });
        return;
      case "too_large":
        log.warn(`mailbox: push service refused a wake as too large (413) at ${endpointOrigin(d.endpoint)}`);
        return this.drop(d);
      case "rejected":
        log.error("mailbox: push service refused a wake (configuration error)", { origin: endpointOrigin(d.endpoint), status: outcome.status, answer: outcome.detail });
        return this.drop(d);
      case "retry": {
        const attempts = d.attempts + 1;
        if (attempts >= MAILBOX_LIMITS.push_max_attempts) {
          log.warn(`mailbox: wake to ${endpointOrigin(d.endpoint)} dropped after ${attempts} tries (last ${outcome.status})`);
          return this.drop(d);
        }
        this.sql.exec(
          "UPDATE deliveries SET attempts = ?, next_at = ? WHERE receiver_id = ? AND seq = ?",
          attempts,
          Date.now() + retryDelay(attempts, outcome.retryAfterSeconds) * 1000,
          d.receiver_id,
          d.seq,
        );
        return;
      }
    }
  }

  private async pushSender(): Promise<WebPushSender> {
    this.sender ??= await relayPushSender(this.env, this.fetch);
    return this.sender;
  }

  private drop(d: { receiver_id: string; seq: number }): void {
    this.sql.exec("DELETE FROM deliveries WHERE receiver_id = ? AND seq = ?", d.receiver_id, d.seq);
  }
}

function retryDelay(attempts: number, retryAfterSeconds: number | undefined): number {
  return retryDelaySeconds(attempts, retryAfterSeconds, {
    baseSeconds: MAILBOX_LIMITS.push_retry_base_seconds,
    maxSeconds: MAILBOX_LIMITS.push_retry_max_seconds,
    retryAfterMaxSeconds: MAILBOX_LIMITS.push_retry_after_max_seconds,
  });
}
