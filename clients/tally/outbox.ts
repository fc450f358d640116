// The sending side's retries (the Tally protocol section 8.2): outbox messages are handed to the relay
// again after every registration (8.2, 8.3) and, while connected, whenever their backoff passes;
// a message older than CLIENT_LIMITS.outbox_max_age_ms is given up before any recipient may
// forget its id (7), so it can never be processed twice.
import { CLIENT_LIMITS } from "./limits";
import type { OutboxItem, TallyStore } from "./store";

interface OutboxOptions {
  /** First retry delay, doubled per attempt up to maxRetryMs. */
  retryMs: number;
  maxRetryMs: number;
  /** Give up after this long. Default CLIENT_LIMITS.outbox_max_age_ms. */
  maxAgeMs?: number;
}

export class OutboxRetry {
  /** 8.3: ids handed to the relay in this session; reset on every registration. */
  private readonly queuedThisSession = new Set<string>();
  private timer: ReturnType<typeof setInterval> | undefined;
  /** Ids a relay took at some point in this client's life (a cancel can no longer take them back). */
  private readonly handed = new Set<string>();
  /** Ids being cancelled: never handed to a relay. */
  private readonly blocked = new Set<string>();

  constructor(
    private readonly store: TallyStore,
    private readonly opts: OutboxOptions,
    /** Hands an envelope to the relay; false when not connected. */
    private readonly toRelay: (item: OutboxItem) => boolean,
    private readonly onExpired: (item: OutboxItem) => void,
  ) {}

  /** 8.2, 8.3: after a (re)registration the relay may have restarted: everything is queued again. */
  newSession(): void {
    this.queuedThisSession.clear();
  }

  /** A message being handed to the relay by its sender right now: not flushed again in this session. */
  claim(id: string): void {
    this.queuedThisSession.add(id);
  }

  async tryQueue(item: OutboxItem): Promise<boolean> {
    if (this.blocked.has(item.id) || !this.toRelay(item)) return false;
    this.handed.add(item.id);
    this.queuedThisSession.add(item.id);
    item.attempts += 1;
    item.last_attempt_at = Date.now();
    await this.store.putOutbox(item);
    return true;
  }

  /** After registration: every message not yet queued in this session; on the timer: those whose backoff passed. */
  async flush(afterRegister = false, now = Date.now()): Promise<void> {
    const maxAge = this.opts.maxAgeMs ?? CLIENT_LIMITS.outbox_max_age_ms;
    for (const item of await this.store.listOutbox()) {
      if (now - item.created_at > maxAge) {
        await this.store.deleteOutbox(item.id);
        this.onExpired(item);
        continue;
      }
      if (afterRegister) {
        if (this.queuedThisSession.has(item.id)) continue;
      } else {
        const backoff = Math.min(this.opts.retryMs * 2 ** Math.max(0, item.attempts - 1), this.opts.maxRetryMs);
        if (now - item.last_attempt_at < backoff) continue;
      }
      if (this.blocked.has(item.id)) continue;
      if (!(await this.tryQueue(item))) return;
    }
  }

  /** Keeps a message from every relay from now on (a cancel); false if a relay took it already. */
  block(id: string): boolean {
    if (this.handed.has(id)) return false;
    this.blocked.add(id);
    return true;
  }

  /** The cancel did not happen: the message may go again. */
  unblock(id: string): void {
    this.blocked.delete(id);
  }

  /** The cancelled message left the outbox: its marks go. */
  forget(id: string): void {
    this.blocked.delete(id);
    this.handed.delete(id);
  }

  start(): void {
    this.stop();
    this.timer = setInterval(() => void this.flush(false), Math.max(250, Math.floor(this.opts.retryMs / 2)));
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
