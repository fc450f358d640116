// Delivery an app can await (the Tally protocol sections 6.2, 8.1, 8.2): for a message it sent, the
// relays' answers (`queued`), its receipt, and its state in the outbox; and cancelling a message
// no path has carried yet. The client feeds it its events; answers that came before the app asked
// are remembered (the last TRACKED_MESSAGES messages), so asking late still answers.
import type { QueuedStatus } from "../../shared/tally/messages";
import type { OutboxItem } from "./store";

/** How many messages' answers are remembered for an app that asks after they came. */
const TRACKED_MESSAGES = 1_000;

/** One relay's answer to a message. */
export interface RelayAnswer {
  status: QueuedStatus;
  /** The relay's URL as given. */
  relay: string;
}

/** The recipient's receipt (8.1): its result (the recipient's handler's, "processed" or "ignored"). */
export interface Receipt {
  result: unknown;
  from: string;
}

/** Where a message the app sent stands. */
export type MessageState =
  /** In the outbox, handed to no relay or channel yet: `cancel()` can still take it back. */
  | { state: "unsent"; attempts: 0 }
  /** In the outbox, handed on `attempts` times (and maybe answered); retried until its receipt. */
  | { state: "sent"; attempts: number; answers: RelayAnswer[] }
  | { state: "receipted"; receipt: Receipt; answers: RelayAnswer[] }
  /** Given up (CLIENT_LIMITS.outbox_max_age_ms) or cancelled: it left the outbox without a receipt. */
  | { state: "expired" | "cancelled" }
  /** Not in the outbox and nothing remembered of it (another client's, or long ago). */
  | { state: "unknown" };

/** A message the app sent, to await. */
export interface Tracked {
  readonly id: string;
  /** The first relay answer (`queued`); with several relays, `answers()` has them all so far. */
  readonly queued: Promise<RelayAnswer>;
  /** The receipt; rejects when the message expires or is cancelled first. */
  readonly receipt: Promise<Receipt>;
  answers(): RelayAnswer[];
}

interface Entry {
  answers: RelayAnswer[];
  receipt?: Receipt;
  ended?: "expired" | "cancelled";
  waiters: Array<{ kind: "queued" | "receipt"; resolve: (v: never) => void; reject: (e: Error) => void }>;
}

export class Tracking {
  private readonly entries = new Map<string, Entry>();
  /** Ids handed to a direct channel in this session (not cancellable). */
  private readonly handedDirect = new Set<string>();

  private entry(id: string): Entry {
    let e = this.entries.get(id);
    if (!e) {
      e = { answers: [], waiters: [] };
      this.entries.set(id, e);
      if (this.entries.size > TRACKED_MESSAGES) {
        for (const [old, o] of this.entries) {
          if (o.waiters.length > 0) continue;
          this.entries.delete(old);
          break;
        }
      }
    }
    return e;
  }

  sentDirect(id: string): void {
    this.handedDirect.add(id);
    if (this.handedDirect.size > TRACKED_MESSAGES) this.handedDirect.delete(this.handedDirect.values().next().value as string);
  }

  onQueued(id: string, status: QueuedStatus, relay: string): void {
    const e = this.entries.get(id);
    if (!e) return; // not one of ours being tracked: track() sends a message's entry first
    e.answers.push({ status, relay });
    this.settle(e, "queued", { status, relay });
  }

  onReceipt(id: string, result: unknown, from: string): void {
    const e = this.entry(id);
    e.receipt = { result, from };
    this.settle(e, "receipt", e.receipt);
  }

  onEnded(id: string, how: "expired" | "cancelled"): void {
    const e = this.entry(id);
    e.ended = how;
    for (const w of e.waiters.splice(0)) w.reject(new Error(`message ${id} ${how} without a receipt`));
  }

  /** Starts remembering a message the client is sending. */
  begin(id: string): void {
    this.entry(id);
  }

  track(id: string): Tracked {
    const e = this.entry(id);
    const wait = <T>(kind: "queued" | "receipt", now: T | undefined) =>
      new Promise<T>((resolve, reject) => {
        if (now !== undefined) return resolve(now);
        if (e.ended) return reject(new Error(`message ${id} ${e.ended} without a receipt`));
        e.waiters.push({ kind, resolve: resolve as (v: never) => void, reject });
      });
    const receipt = wait<Receipt>("receipt", e.receipt);
    receipt.catch(() => {}); // an app that awaits only `queued` is not told of an unhandled rejection
    const queued = wait<RelayAnswer>("queued", e.answers[0]);
    queued.catch(() => {});
    return { id, queued, receipt, answers: () => [...e.answers] };
  }

  state(id: string, item: OutboxItem | undefined): MessageState {
    const e = this.entries.get(id);
    if (e?.receipt) return { state: "receipted", receipt: e.receipt, answers: [...e.answers] };
    if (item) {
      if (item.attempts === 0 && !this.handedDirect.has(id)) return { state: "unsent", attempts: 0 };
      return { state: "sent", attempts: item.attempts, answers: [...(e?.answers ?? [])] };
    }
    if (e?.ended) return { state: e.ended };
    return { state: "unknown" };
  }

  /** Whether a message may be cancelled: never handed to a relay or channel. */
  cancellable(item: OutboxItem): boolean {
    return item.attempts === 0 && !this.handedDirect.has(item.id);
  }

  private settle(e: Entry, kind: "queued" | "receipt", value: unknown): void {
    e.waiters = e.waiters.filter((w) => {
      if (w.kind !== kind) return true;
      w.resolve(value as never);
      return false;
    });
  }
}
