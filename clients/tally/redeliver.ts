// A message whose handler failed is run again by the client itself (inbound.ts), promptly: the
// relay redelivers an unacked copy only at the next registration, and the sender retries on a
// back-off of up to an hour, so neither may be waited for. Each failed message is tried again
// after `firstMs`, then doubling up to CLIENT_LIMITS.handler_retry_max_ms, for as long as the
// client is open; at most CLIENT_LIMITS.handler_retries_kept messages at once (past that, the
// oldest is left to the relay's and the sender's copies).
import { CLIENT_LIMITS } from "./limits";

export class Redeliveries {
  private readonly pending = new Map<string, { timer: ReturnType<typeof setTimeout>; attempt: number }>();
  private stopped = false;

  constructor(private readonly firstMs: number) {}

  /** Runs `again` after this message's next delay (its first, or double its last). */
  schedule(from: string, id: string, again: () => void): void {
    if (this.stopped) return;
    const key = `${from} ${id}`;
    const before = this.pending.get(key);
    if (before) clearTimeout(before.timer);
    this.pending.delete(key);
    const attempt = (before?.attempt ?? -1) + 1;
    const delay = Math.min(this.firstMs * 2 ** attempt, CLIENT_LIMITS.handler_retry_max_ms);
    const timer = setTimeout(() => {
      if (this.pending.get(key)?.timer !== timer) return;
      again();
    }, delay);
    this.pending.set(key, { timer, attempt });
    if (this.pending.size > CLIENT_LIMITS.handler_retries_kept) {
      const [oldest, p] = this.pending.entries().next().value as [string, { timer: ReturnType<typeof setTimeout> }];
      clearTimeout(p.timer);
      this.pending.delete(oldest);
    }
  }

  /** The message was handled (or found processed): no more runs. */
  cancel(from: string, id: string): void {
    const key = `${from} ${id}`;
    const p = this.pending.get(key);
    if (!p) return;
    clearTimeout(p.timer);
    this.pending.delete(key);
  }

  stop(): void {
    this.stopped = true;
    for (const p of this.pending.values()) clearTimeout(p.timer);
    this.pending.clear();
  }
}
