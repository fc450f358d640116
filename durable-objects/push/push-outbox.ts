// One Web Push outbox (RFC 8030 §5, RFC 8292 §4): the pushes an object queued, sent when due
// through the relay-wide gate per push-service origin (push-gate.ts), with one set of rules for
// every object that pushes (a mailbox's wakes, a hosted account's wakes):
// - a push to an endpoint the push-endpoint rule does not allow (stored before the rule, or under
//   a PUSH_ENDPOINT_ALLOW since removed) is not sent: its receiver counts as gone (warned);
// - a push tried push_max_attempts times (a send that took the relay down with it) is dropped;
// - what the gate holds back waits, costing no try;
// - each try is counted, and its retry time set, before it is made;
// - 2xx: delivered (counted); 404/410: the receiver is gone (the store decides what that means:
//   a mailbox forgets it, a hosted account stops pushing to it until it is written again);
//   413: dropped, warned ("too_large"); other 4xx: dropped, logged as an error (a configuration
//   error); 429/5xx/no answer: tried again after the backoff or the service's Retry-After, dropped
//   (warned) once the tries are spent, and a try with no answer at all (the connection failed or
//   timed out: perhaps no push service is there) spends them sooner: after
//   push_max_unanswered_tries tries in all; a push that cannot be built: dropped, logged as an error.
// The outbox holds no state: the store (OutboxStore) keeps the pushes.
import { endpointOrigin, checkPushEndpoint, type EndpointPolicy } from "../../server/webpush/endpoint";
import { retryDelaySeconds, type PushOptions, type PushOutcome, type PushTarget, type RetryPolicy } from "../../server/webpush/send";
import { log } from "../../server/log";
import { WEBPUSH_LIMITS } from "../../shared/limits";

/** One push as its store hands it out. */
export interface OutboxPush {
  target: PushTarget;
  /** Tries made so far. */
  attempts: number;
}

/** What a push carries: its payload (encrypted by the sender) and its Web Push options. */
export interface PushMessage {
  payload: Uint8Array;
  options: PushOptions;
}

/** Where an outbox's pushes are kept (a mailbox's `deliveries`, an account's `pushes`). */
export interface OutboxStore<P extends OutboxPush> {
  /** The pushes due at `now`, oldest first (at most what the store allows at once). */
  due(now: number): P[];
  /** The push's message now, or null when it has nothing to send any more (its item expired). */
  message(push: P): PushMessage | null;
  /** Sets the push's tries and when it is tried next. */
  reschedule(push: P, attempts: number, at: number): void;
  /** The push is done with (delivered, or dropped): it goes. */
  remove(push: P): void;
  /** The push's receiver is gone (404/410, or its endpoint no longer allowed): it and its pushes go, or stop. */
  gone(push: P): void;
}

/** What sends one push (server/webpush/send.ts WebPushSender, or a stand-in in tests). */
export interface PushSender {
  send(target: PushTarget, payload: Uint8Array, options: PushOptions): Promise<PushOutcome>;
}

export interface OutboxRules {
  /** Who is pushing, for the log ("mailbox", "minca account"). */
  what: string;
  maxAttempts: number;
  /** Tries after which a try with no answer drops the push; WEBPUSH_LIMITS.push_max_unanswered_tries when absent. */
  maxUnansweredAttempts?: number;
  retry: RetryPolicy;
}

export interface OutboxDeps {
  /** The relay's sender (VAPID keys); throws when there are none. */
  sender: () => Promise<PushSender>;
  /** The origins' gates: what goes now, and what waits until when (push-gate.ts admitPushes). */
  admit: <T>(items: T[], endpointOf: (item: T) => string, fallbackMs: number) => Promise<{ go: T[]; wait: Array<{ item: T; at: number }> }>;
  /** The push-endpoint rule now. */
  policy: () => EndpointPolicy;
  /** Counts a delivered push (the status page); optional. */
  delivered?: () => void;
  now?: () => number;
}

export class PushOutbox<P extends OutboxPush> {
  private readonly now: () => number;

  constructor(
    private readonly store: OutboxStore<P>,
    private readonly rules: OutboxRules,
    private readonly deps: OutboxDeps,
  ) {
    this.now = deps.now ?? Date.now;
  }

  /** Sends the pushes due now, and acts on each answer. */
  async sendDue(): Promise<void> {
    const due = this.store.due(this.now());
    if (due.length === 0) return;
    let sender: PushSender;
    try {
      sender = await this.deps.sender();
    } catch (err) {
      log.error(`${this.rules.what}: no VAPID keys, pushes wait`, { err });
      const later = this.now() + this.rules.retry.baseSeconds * 1000;
      for (const p of due) this.store.reschedule(p, p.attempts, later);
      return;
    }
    const policy = this.deps.policy();
    const live: P[] = [];
    for (const p of due) {
      if (!checkPushEndpoint(p.target.endpoint, policy).ok) {
        log.warn(`${this.rules.what}: a receiver's endpoint fails the push-endpoint rule; not pushed to`, {
          origin: endpointOrigin(p.target.endpoint),
        });
        this.store.gone(p);
      } else if (p.attempts >= this.rules.maxAttempts) {
        // tried as often as it may be: each of those tries ended without an answer (the relay went down)
        log.warn(`${this.rules.what}: a push to ${endpointOrigin(p.target.endpoint)} dropped after ${p.attempts} unanswered tries`);
        this.store.remove(p);
      } else live.push(p);
    }
    const { go, wait } = await this.deps.admit(live, (p) => p.target.endpoint, this.rules.retry.baseSeconds * 1000);
    for (const { item, at } of wait) this.store.reschedule(item, item.attempts, at);
    // Each try is counted, and its retry time set, before it is made.
    const tried = go.map((p) => {
      const attempts = p.attempts + 1;
      this.store.reschedule(p, attempts, this.now() + retryDelaySeconds(attempts, undefined, this.rules.retry) * 1000);
      return { push: p, attempts };
    });
    await Promise.all(tried.map(({ push, attempts }) => this.sendOne(sender, push, attempts)));
  }

  private async sendOne(sender: PushSender, p: P, attempts: number): Promise<void> {
    const message = this.store.message(p);
    if (message === null) return this.store.remove(p);
    let outcome: PushOutcome;
    try {
      outcome = await sender.send(p.target, message.payload, message.options);
    } catch (err) {
      // Keys are checked when a receiver is written, so this is corrupt state: retrying cannot help.
      log.error(`${this.rules.what}: a push could not be built`, { err });
      return this.store.remove(p);
    }
    this.settle(p, attempts, outcome);
  }

  /** Acts on a push service's answer. */
  private settle(p: P, attempts: number, outcome: PushOutcome): void {
    const origin = endpointOrigin(p.target.endpoint);
    switch (outcome.kind) {
      case "delivered":
        this.deps.delivered?.();
        this.store.remove(p);
        return;
      case "gone":
        this.store.gone(p);
        return;
      case "too_large":
        log.warn(`${this.rules.what}: a push service refused a push as too large (413)`, { origin });
        this.store.remove(p);
        return;
      case "rejected":
        log.error(`${this.rules.what}: a push service refused a push (configuration error)`, {
          origin,
          status: outcome.status,
          answer: outcome.detail,
        });
        this.store.remove(p);
        return;
      case "retry":
        if (outcome.status === 0 && attempts >= (this.rules.maxUnansweredAttempts ?? WEBPUSH_LIMITS.push_max_unanswered_tries)) {
          log.warn(`${this.rules.what}: a push to ${origin} dropped after ${attempts} tries, the last unanswered`, {
            error: outcome.error,
          });
          this.store.remove(p);
          return;
        }
        if (outcome.status === 0) log.info(`${this.rules.what}: a push to ${origin} got no answer`, { attempts, error: outcome.error });
        if (attempts >= this.rules.maxAttempts) {
          log.warn(`${this.rules.what}: a push to ${origin} dropped after ${attempts} tries (last ${outcome.status})`);
          this.store.remove(p);
          return;
        }
        this.store.reschedule(p, attempts, this.now() + retryDelaySeconds(attempts, outcome.retryAfterSeconds, this.rules.retry) * 1000);
        return;
    }
  }
}
