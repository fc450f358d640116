// A mailbox's wakes (docs/mailbox.md, the Minca protocol §4.4): one `deliveries` row per receiver and new
// item, written with the item (minca-mailbox.ts), and the store the mailbox's push outbox
// (push/push-outbox.ts) sends them from when its alarm fires. A receiver that is gone (404/410, or
// an endpoint the push-endpoint rule no longer allows) is forgotten with its wakes.
import { MAILBOX_LIMITS } from "../../shared/limits";
import { wakeBody } from "../../shared/mailbox/messages";
import { wakePushTopic } from "../../shared/mailbox/topic";
import type { RetryPolicy } from "../../server/webpush/send";
import type { OutboxPush, OutboxStore, PushMessage } from "../push/push-outbox";

export interface Wake extends OutboxPush {
  receiverId: string;
  seq: number;
}

interface DueRow extends Record<string, SqlStorageValue> {
  receiver_id: string;
  seq: number;
  attempts: number;
  endpoint: string;
  p256dh: string;
  auth: string;
}

export const MAILBOX_WAKE_RULES = {
  what: "mailbox",
  maxAttempts: MAILBOX_LIMITS.push_max_attempts,
  retry: {
    baseSeconds: MAILBOX_LIMITS.push_retry_base_seconds,
    maxSeconds: MAILBOX_LIMITS.push_retry_max_seconds,
    retryAfterMaxSeconds: MAILBOX_LIMITS.push_retry_after_max_seconds,
  } satisfies RetryPolicy,
};

const nowSeconds = () => Math.floor(Date.now() / 1000);

export class MailboxWakes implements OutboxStore<Wake> {
  private readonly sql: SqlStorage;

  constructor(
    private readonly storage: DurableObjectStorage,
    /** The topic the mailbox serves (null: unknown; its wakes are dropped). */
    private readonly topic: () => string | null,
  ) {
    this.sql = storage.sql;
  }

  due(now: number): Wake[] {
    return this.sql
      .exec<DueRow>(
        `SELECT d.receiver_id, d.seq, d.attempts, r.endpoint, r.p256dh, r.auth
           FROM deliveries d JOIN receivers r ON r.id = d.receiver_id
          WHERE d.next_at <= ? ORDER BY d.next_at, d.seq LIMIT ?`,
        now,
        MAILBOX_LIMITS.push_batch,
      )
      .toArray()
      .map((d) => ({
        receiverId: d.receiver_id,
        seq: d.seq,
        attempts: d.attempts,
        target: { endpoint: d.endpoint, keys: { p256dh: d.p256dh, auth: d.auth } },
      }));
  }

  message(w: Wake): PushMessage | null {
    const topic = this.topic();
    if (topic === null) return null;
    const item = this.sql
      .exec<{ until: number; blob: ArrayBuffer }>("SELECT until, blob FROM items WHERE seq = ? AND until > ?", w.seq, nowSeconds())
      .toArray()[0];
    if (!item) return null;
    return {
      payload: wakeBody(topic, w.seq, new Uint8Array(item.blob)),
      options: { ttl: Math.max(0, item.until - nowSeconds()), urgency: "normal", topic: wakePushTopic(topic) },
    };
  }

  reschedule(w: Wake, attempts: number, at: number): void {
    this.sql.exec("UPDATE deliveries SET attempts = ?, next_at = ? WHERE receiver_id = ? AND seq = ?", attempts, at, w.receiverId, w.seq);
  }

  remove(w: Wake): void {
    this.sql.exec("DELETE FROM deliveries WHERE receiver_id = ? AND seq = ?", w.receiverId, w.seq);
  }

  /** Forgets the receiver pushed to, with its wakes; one re-registered under another endpoint meanwhile stays. */
  gone(w: Wake): void {
    this.storage.transactionSync(() => {
      const hit = this.sql.exec("DELETE FROM receivers WHERE id = ? AND endpoint = ?", w.receiverId, w.target.endpoint).rowsWritten;
      if (hit > 0) this.sql.exec("DELETE FROM deliveries WHERE receiver_id = ?", w.receiverId);
      else this.remove(w);
    });
  }

  /** When the next wake is due (ms), or null. */
  nextDue(): number | null {
    return this.sql.exec<{ t: number | null }>("SELECT MIN(next_at) AS t FROM deliveries").one().t;
  }

  /** Forgets a receiver and the wakes still to send to it; whether it was there. */
  forgetReceiver(id: string): boolean {
    return this.storage.transactionSync(() => {
      this.sql.exec("DELETE FROM deliveries WHERE receiver_id = ?", id);
      return this.sql.exec("DELETE FROM receivers WHERE id = ?", id).rowsWritten > 0;
    });
  }
}
