// A Tally sender's share of the relay's Tally total across all its recipients (docs/hostile.md,
// "Shares of a total"; the Tally protocol §6.4 leaves the policy to the relay): a byte budget of
// storage.sender_share of the total, refilled evenly over storage.share_period_seconds, kept in
// the SENDER's own object (its `meta` table), so an evicted object or a reconnect does not reset
// it. An envelope is checked against it before it goes to its recipient, and charged only when the
// recipient answers `stored` (an online delivery costs nothing). What is on its way is held back in
// memory, so envelopes in flight together cannot pass the share. The share is not written once per
// envelope stored (a write per envelope in the sender's object cost the store path a row each), and
// no timer keeps the object up to write it later: the first charge after a quiet flush interval
// is written at once, exactly; a charge within the interval after a write is covered by writing
// the share less storage.sender_share_written_ahead of it (one write for the charges that follow,
// until that much more is charged), and the exact share is written after the burst, from the
// object's alarm (base/deferred.ts). What the object keeps is thus never more than what is left of
// the share: an object reset before its alarm leaves the sender at most the part written ahead
// less, never more (the safe side).
// Keys are free, addresses are not: each envelope also counts against the share of the client
// address it came from (storage.client_share of the Tally total, in this isolate's memory, as the
// Worker keeps the HTTP-fed totals' shares), reserved at the check and settled on the answer, so
// many fresh keys from one address fill no more than one address's share. Not applied to the
// shared client (no trusted address).
import type { Deferred, DeferredPart } from "../base/deferred";
import type { Meta } from "../base/meta";
import { SHARED_CLIENT } from "../../server/object-headers";
import { STATS_LIMITS, STORAGE_LIMITS } from "../../shared/limits";
import { ClientShares } from "../../shared/rate-limit";
import { rowBytes, shareAt, shareCapacity, shareCharge, shareWaitMs, type ShareState } from "../../shared/storage";
import { CONTACT_ROW_BYTES } from "./tally-contacts";

const META_KEY = "sender_share";
const PERIOD_MS = STORAGE_LIMITS.share_period_seconds * 1000;

/** Each client address's share of the Tally total, across every key it sends from (this isolate's memory). */
const addresses = new ClientShares<"tally">(PERIOD_MS, STORAGE_LIMITS.client_shares_remembered);

export class SenderShare {
  private state: ShareState | undefined | null = null;
  /** Bytes of envelopes on their way, not yet answered. */
  private pending = 0;
  private readonly capacity: number;
  /** One client address's share of the Tally total (storage.client_share). */
  private readonly addressCapacity: number;
  private readonly persist: DeferredPart;
  /** What the sender's meta holds (null: not read yet): never more tokens than `state` has, at any time. */
  private written: ShareState | undefined | null = null;
  /** When the share was last written (ms): a charge within the flush interval writes ahead. */
  private writtenAt = Number.NEGATIVE_INFINITY;
  /** Bytes written ahead of the charges (storage.sender_share_written_ahead of the share). */
  private readonly ahead: number;

  constructor(
    deferred: Deferred,
    private readonly meta: Meta,
    /** The relay-wide Tally total in force (the settings' storage.tally, parsed). */
    tallyTotal: number,
  ) {
    this.capacity = shareCapacity(tallyTotal, STORAGE_LIMITS.sender_share);
    this.addressCapacity = shareCapacity(tallyTotal, STORAGE_LIMITS.client_share);
    this.ahead = Math.floor(this.capacity * STORAGE_LIMITS.sender_share_written_ahead);
    this.persist = deferred.part(() => this.write());
  }

  /** What an envelope of `bytes` costs the share: its row, as the recipient's queue charges it. */
  static cost(bytes: number): number {
    return rowBytes(bytes);
  }

  /**
   * What a sender's first envelope to a user costs beyond the envelope's row, whatever the
   * recipient answers: the contact row it makes in the sender's own object, and the sender's
   * database (storage.database_bytes_tally) when it holds nothing yet.
   */
  static firstCost(senderHoldsNothing: boolean): number {
    return CONTACT_ROW_BYTES + (senderHoldsNothing ? STORAGE_LIMITS.database_bytes_tally : 0);
  }

  /**
   * What a sender's first envelope to a user costs at the recipient when it is stored: the
   * recipient's database, which it may bring about (a delivery to an online device keeps nothing there).
   */
  static recipientFirstCost(): number {
    return STORAGE_LIMITS.database_bytes_tally;
  }

  /**
   * Whether an envelope costing `cost` fits the share now, the key's and that of the client address
   * it came from; if so it is held back (reserved at the address) until settle().
   */
  take(cost: number, client: string, now = Date.now()): boolean {
    const s = shareAt(this.load(), this.capacity, PERIOD_MS, now);
    if (shareWaitMs({ tokens: s.tokens - this.pending, at: s.at }, this.capacity, PERIOD_MS, cost) > 0) return false;
    if (client !== SHARED_CLIENT && addresses.reserve("tally", client, this.addressCapacity, cost, now) > 0) return false;
    this.pending += cost;
    return true;
  }

  /** The recipient answered for an envelope take() let through: `charged` of its `cost` was stored (the rest goes back). */
  settle(cost: number, charged: number, client: string, now = Date.now()): void {
    this.pending = Math.max(0, this.pending - cost);
    charged = Math.min(cost, Math.max(0, charged));
    if (client !== SHARED_CLIENT) addresses.refund("tally", client, this.addressCapacity, cost - charged, now);
    if (charged === 0) return;
    const state = shareCharge(shareAt(this.load(), this.capacity, PERIOD_MS, now), charged);
    this.state = state;
    if (now - this.writtenAt >= STATS_LIMITS.flush_interval_ms) {
      this.store(state, now); // the first charge after a quiet interval: exact, and nothing left to write
      return;
    }
    // Within a burst: what is kept must not hold more than is left, now and as both refill.
    const kept = shareAt(this.written ?? undefined, this.capacity, PERIOD_MS, now);
    if (kept.tokens > state.tokens) this.store({ tokens: state.tokens - this.ahead, at: state.at }, now);
    this.persist.later();
  }

  /** Writes the share as it is now, when what is kept differs (the deferred work calls it after a burst; tests may too). */
  write(): void {
    const s = this.state;
    if (!s || (this.written && this.written.tokens === s.tokens && this.written.at === s.at)) return;
    this.store(s, Date.now());
  }

  private store(s: ShareState, now: number): void {
    this.meta.set(META_KEY, `${s.tokens} ${s.at}`);
    this.written = s;
    this.writtenAt = now;
  }

  private load(): ShareState | undefined {
    if (this.state === null) {
      const [tokens, at] = (this.meta.get(META_KEY) ?? "").split(" ").map(Number);
      this.state = Number.isFinite(tokens) && Number.isFinite(at) && at > 0 ? { tokens, at } : undefined;
      this.written = this.state;
    }
    return this.state;
  }
}
