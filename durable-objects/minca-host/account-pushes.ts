// An account's wakes as pushes (the Minca protocol §4.4, built here): a new version that wakes one
// of the account's wakes queues one push per live receiver (the `pushes` table), and the
// account's alarm sends what is due within the per-minute budget through the relay's one push
// outbox (durable-objects/push/push-outbox.ts: the gate per push-service origin, each try counted
// before it is made, one set of rules for each answer). This is the outbox's store.
import { toArrayBuffer } from "../../shared/encoding";
import type { AccountStore } from "./account-store";
import { PushOutbox, type OutboxPush, type OutboxStore, type PushMessage } from "../push/push-outbox";
import { relayOutboxDeps } from "../push/relay-outbox";
import { MINCA_WAKE_LIMITS } from "../../shared/limits";
import type { WakeBody } from "../../shared/minca/carry";
import { WAKE_RETRY, wakeMatches, wakePayload, wakeTopic, type Arrival } from "../../server/minca/wake";
import type { FetchLike } from "../../server/webpush/send";

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

/** One queued push as the outbox hands it out. */
export interface AccountPush extends OutboxPush {
  id: number;
  receiver: string;
  endpoint: string;
  payload: ArrayBuffer;
  topic: string;
}

export class AccountPushes implements OutboxStore<AccountPush> {
  private readonly outbox: PushOutbox<AccountPush>;

  constructor(
    private readonly store: AccountStore,
    env: Env,
    /** The fetch pushes go out with (read at each send, so tests may replace it). */
    fetch: FetchLike,
  ) {
    this.outbox = new PushOutbox<AccountPush>(
      this,
      { what: "minca account", maxAttempts: MINCA_WAKE_LIMITS.push_max_attempts, retry: WAKE_RETRY },
      relayOutboxDeps(env, fetch),
    );
  }

  private get sql(): SqlStorage {
    return this.store.sql;
  }

  /**
   * Queues one push per live receiver for each arrival that wakes one of the account's wakes;
   * the number queued (0: nothing to send, no outbound request). Past max_pending_pushes the
   * oldest are dropped.
   */
  queue(account: string, arrivals: Array<{ arrival: Arrival; raw: string }>): number {
    const wakes = this.sql
      .exec<{ body: string }>("SELECT body FROM wakes")
      .toArray()
      .map((r) => JSON.parse(r.body) as WakeBody);
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
          this.sql.exec(
            "INSERT INTO pushes (receiver, endpoint, payload, topic, next_at) VALUES (?, ?, ?, ?, ?)",
            r.key,
            r.endpoint,
            payload,
            topic,
            now,
          );
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
    if (
      push !== null &&
      this.store.meta.get("push_minute") === String(minute) &&
      Number(this.store.meta.get("push_count")) >= MINCA_WAKE_LIMITS.pushes_per_minute
    ) {
      push = Math.max(push, (minute + 1) * 60_000);
    }
    return push;
  }

  /** Sends the pushes due, within this minute's budget (pushes_per_minute), through the one push outbox. */
  sendDue(): Promise<void> {
    return this.outbox.sendDue();
  }

  // ---- the outbox's store (durable-objects/push/push-outbox.ts) --------------------------------

  /**
   * The pushes due at `now`, oldest first, within this minute's budget (each handed out counts
   * against it); pushes to receivers removed, replaced or gone meanwhile go.
   */
  due(now: number): AccountPush[] {
    const minute = Math.floor(now / 60_000);
    const sent = this.store.meta.get("push_minute") === String(minute) ? Number(this.store.meta.get("push_count") ?? 0) : 0;
    const budget = MINCA_WAKE_LIMITS.pushes_per_minute - sent;
    if (budget <= 0) return [];
    const due = this.sql
      .exec<PushRow>(
        `SELECT p.id, p.receiver, p.endpoint, p.payload, p.topic, p.attempts, r.p256dh, r.auth
           FROM pushes p JOIN receivers r ON r.key = p.receiver AND r.endpoint = p.endpoint AND r.gone = 0
          WHERE p.next_at <= ? ORDER BY p.next_at, p.id LIMIT ?`,
        now,
        budget,
      )
      .toArray();
    this.sql.exec(
      `DELETE FROM pushes WHERE NOT EXISTS (
         SELECT 1 FROM receivers r WHERE r.key = pushes.receiver AND r.endpoint = pushes.endpoint AND r.gone = 0)`,
    );
    if (due.length === 0) return [];
    this.store.meta.set("push_minute", String(minute));
    this.store.meta.set("push_count", String(sent + due.length));
    return due.map((p) => ({
      id: p.id,
      receiver: p.receiver,
      endpoint: p.endpoint,
      payload: p.payload,
      topic: p.topic,
      attempts: p.attempts,
      target: { endpoint: p.endpoint, keys: { p256dh: p.p256dh, auth: p.auth } },
    }));
  }

  message(p: AccountPush): PushMessage {
    return { payload: new Uint8Array(p.payload), options: { ttl: MINCA_WAKE_LIMITS.push_ttl_seconds, urgency: "normal", topic: p.topic } };
  }

  reschedule(p: AccountPush, attempts: number, at: number): void {
    this.sql.exec("UPDATE pushes SET attempts = ?, next_at = ? WHERE id = ?", attempts, at, p.id);
  }

  remove(p: AccountPush): void {
    this.sql.exec("DELETE FROM pushes WHERE id = ?", p.id);
  }

  /**
   * 404/410, or an endpoint the rule no longer allows: nothing of the account's records is
   * deleted, but the receiver is not pushed to until its record is written again.
   */
  gone(p: AccountPush): void {
    this.sql.exec("UPDATE receivers SET gone = 1 WHERE key = ? AND endpoint = ?", p.receiver, p.endpoint);
    this.sql.exec("DELETE FROM pushes WHERE receiver = ? AND endpoint = ?", p.receiver, p.endpoint);
  }
}
