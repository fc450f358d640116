// A Tally sender's share of the relay's Tally total across all its recipients (docs/hostile.md,
// "Shares of a total"; the Tally protocol §6.4 leaves the policy to the relay): a byte budget of
// storage.sender_share of the total, refilled evenly over storage.share_period_seconds, kept in
// the SENDER's own object (its `meta` table), so an evicted object or a reconnect does not reset
// it. An envelope is checked against it before it goes to its recipient, and charged only when the
// recipient answers `stored` (an online delivery costs nothing). What is on its way is held back in
// memory, so envelopes in flight together cannot pass the share. The share is written at most once
// per stats.flush_interval_ms (the object stays up for it), not once per envelope stored: a write
// per envelope in the sender's object cost the store path a commit each.
import { Debounced } from "../base/debounced";
import type { Meta } from "../base/meta";
import { STATS_LIMITS, STORAGE_LIMITS } from "../../shared/limits";
import { rowBytes, shareAt, shareCapacity, shareCharge, shareWaitMs, storageTotals, type ShareState } from "../../shared/storage";

const META_KEY = "sender_share";
const PERIOD_MS = STORAGE_LIMITS.share_period_seconds * 1000;

export class SenderShare {
  private state: ShareState | undefined | null = null;
  /** Bytes of envelopes on their way, not yet answered. */
  private pending = 0;
  private readonly capacity: number;
  private readonly persist: Debounced;

  constructor(
    ctx: DurableObjectState,
    private readonly meta: Meta,
    env: Partial<Record<"STORAGE_TALLY_BYTES", string>>,
  ) {
    this.capacity = shareCapacity(storageTotals(env).tally, STORAGE_LIMITS.sender_share);
    this.persist = new Debounced(ctx, STATS_LIMITS.flush_interval_ms, async () => this.write());
  }

  /** What an envelope of `bytes` costs the share: its row, as the recipient's queue charges it. */
  static cost(bytes: number): number {
    return rowBytes(bytes);
  }

  /** Whether an envelope costing `cost` fits the share now; if so it is held back until settle(). */
  take(cost: number, now = Date.now()): boolean {
    const s = shareAt(this.load(), this.capacity, PERIOD_MS, now);
    if (shareWaitMs({ tokens: s.tokens - this.pending, at: s.at }, this.capacity, PERIOD_MS, cost) > 0) return false;
    this.pending += cost;
    return true;
  }

  /** The recipient answered for an envelope take() let through: charged when it was stored. */
  settle(cost: number, stored: boolean, now = Date.now()): void {
    this.pending = Math.max(0, this.pending - cost);
    if (!stored) return;
    this.state = shareCharge(shareAt(this.load(), this.capacity, PERIOD_MS, now), cost);
    this.persist.schedule();
  }

  /** Writes the share as it is now (the timer calls it; tests may too). */
  write(): void {
    if (this.state) this.meta.set(META_KEY, `${this.state.tokens} ${this.state.at}`);
  }

  private load(): ShareState | undefined {
    if (this.state === null) {
      const [tokens, at] = (this.meta.get(META_KEY) ?? "").split(" ").map(Number);
      this.state = Number.isFinite(tokens) && Number.isFinite(at) && at > 0 ? { tokens, at } : undefined;
    }
    return this.state;
  }
}
