// Envelopes on their way to other users' objects, by recipient: while one RPC to a recipient's
// object is in flight, the envelopes that follow for it wait and go together in the next one (at
// most rpc_batch_envelopes). One RPC per batch instead of one per envelope, and envelopes from one
// user to another arrive in the order they were sent. Each envelope is still answered on its own;
// a failure fails only its own envelope.
import { TALLY_LIMITS } from "../../shared/limits";
import type { QueuedStatus } from "../../shared/tally/messages";

/**
 * What a recipient's object did with an envelope: a `queued` status, or `storage_full` when it
 * would have been stored but the relay-wide total of stored envelopes has no room (docs/hostile.md).
 */
export type Delivery = QueuedStatus | "storage_full";

/** `mayStore` false: the sender is past its share (sender-share.ts): delivered online or not at all. */
export type EnvelopeCall = [raw: string, fromHex: string, id: string, mayStore?: boolean];

/**
 * After a batch's statuses, a recipient's object that holds no storage says so (one more element):
 * it has no alarm of its own, so the sender asks it to report its counts after the burst. (A sender
 * of an earlier version reads the statuses by position and never sees it.)
 */
export const HOLDS_NOTHING = "holds_nothing";

/** What a recipient's object answers a batch: a status per envelope (null: failed), then HOLDS_NOTHING when it holds no storage. */
export type BatchAnswer = Array<Delivery | null | typeof HOLDS_NOTHING>;

/** Hands a batch to the recipient `toHex`'s object; resolves with its answer. */
type DeliverBatch = (toHex: string, batch: EnvelopeCall[]) => Promise<BatchAnswer>;

interface Outgoing {
  call: EnvelopeCall;
  resolve: (status: Delivery) => void;
  reject: (err: unknown) => void;
}

export class EnvelopeBatcher {
  private readonly waiting = new Map<string, Outgoing[]>();

  constructor(
    private readonly deliverBatch: DeliverBatch,
    /** The recipient `toHex` answered that it holds no storage. */
    private readonly holdsNothing: (toHex: string) => void = () => {},
  ) {}

  /** Hands an envelope to its recipient's object; resolves with what that object did with it. */
  deliver(toHex: string, raw: string, fromHex: string, id: string, mayStore = true): Promise<Delivery> {
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(toHex);
      const item = { call: (mayStore ? [raw, fromHex, id] : [raw, fromHex, id, false]) as EnvelopeCall, resolve, reject };
      if (queue) return void queue.push(item); // a batch is in flight: go with the next one
      this.waiting.set(toHex, [item]);
      void this.drain(toHex);
    });
  }

  private async drain(toHex: string): Promise<void> {
    for (;;) {
      const queue = this.waiting.get(toHex)!;
      if (queue.length === 0) return void this.waiting.delete(toHex);
      const batch = queue.splice(0, TALLY_LIMITS.rpc_batch_envelopes);
      try {
        const answer = await this.deliverBatch(
          toHex,
          batch.map((e) => e.call),
        );
        if (answer[batch.length] === HOLDS_NOTHING) this.holdsNothing(toHex);
        batch.forEach((e, k) => {
          const status = answer[k];
          if (status && status !== HOLDS_NOTHING) e.resolve(status);
          else e.reject(new Error(`delivery of ${e.call[2]} failed`));
        });
      } catch (err) {
        for (const e of batch) e.reject(err);
      }
    }
  }
}
