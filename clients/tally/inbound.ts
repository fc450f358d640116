// The receiving half of a Tally client (the Tally protocol sections 5.3, 7, 8.1, 12.7 and 13.7): every
// envelope, from any path, goes through one ordered pipeline: the receiver's checks, dedup
// against the processed set, the app's handler, the ledger, the relay ack and the receipt.
//
// Decision (nothing lost): a message counts as processed only once its handler returned. The
// processed id (with the receipt's result) is written after the handler and the ledger entry,
// so a crash anywhere before that write leaves the message unprocessed: the relay's copy is not
// acked and no receipt was sent, so it comes again and is handled then. A handler that throws
// is the same: no processed id, no ack, no receipt. The cost is that a crash between the
// handler's return and the processed-id write runs that handler again (at least once, never
// lost); an app whose handler must not repeat makes it idempotent by the message id.
//
// Decision (prompt, and no effect twice): a message whose handler failed is run again here, at
// growing intervals (redeliver.ts), without waiting for the relay or the sender's back-off; with
// several handlers, those that had returned are not run again (their results are kept as marks,
// handlers.ts), only the failed one and those after it.
import { openEnvelopeWith } from "../../shared/tally/envelope";
import type { TallySigner } from "../../shared/tally/signer";
import { innerToLedgerEntry, type LedgerEntry } from "../../shared/tally/entry";
import { reportListenerError } from "../listeners";
import type { Emitter, Delivery, InnerMessage, TallyClientEvents } from "./events";
import { IGNORED_RESULT, type TallyStore } from "./store";
import type { SyncEngine } from "./sync";
import { receiptResult, type HandlerMarks, type HandlerRegistry } from "./handlers";
import { Redeliveries } from "./redeliver";

/** Receipt type (the Tally protocol §8.1). */
export const RECEIPT_TYPE = "received";
/** Types that travel between one user's devices (self-envelopes, 13.8) and never get receipts. */
export const SELF_SYNC_TYPES = new Set(["sync_hello", "sync_data"]);
/** The receipt result that keeps a message out of the ledger (8.1, 12.8). */
export const IGNORED = IGNORED_RESULT;
/** The receipt result of a message the handler accepted without naming a result. */
const PROCESSED = "processed";

/** What the pipeline needs of the client. */
interface InboundHost {
  readonly npub: string;
  readonly pubkeyHex: string;
  /** Opens envelopes (the key may be elsewhere: a browser extension). */
  readonly signer: TallySigner;
  readonly store: TallyStore;
  readonly events: Emitter<TallyClientEvents>;
  readonly sync: SyncEngine;
  /** Appends to the ledger (and broadcasts to own devices, 13.5); false when already held. */
  appendLedger(entry: LedgerEntry): Promise<boolean>;
  /** Sends a receipt to `to`: a direct channel if one is open, else the relay (8.1). */
  sendReceipt(to: string, messageId: string, result: string): Promise<void>;
  /** The app's handlers (listeners of `message` and handlers by type). */
  readonly handlers: HandlerRegistry;
  /** First delay before a failed message is run again here (then doubling). */
  readonly handlerRetryMs: number;
  /** A message was handled (tabs: the other clients are told). */
  onHandled?(inner: InnerMessage): void;
}

/** The outcome of running the app's handlers on a new message; `marked`: some had run on an earlier copy. */
type Handled = { ok: true; result: string; marked: boolean } | { ok: false };

export class InboundPipeline {
  private chain: Promise<void> = Promise.resolve();
  /** Marks of handlers that returned on a message whose later handler failed, for stores without marks. */
  private readonly memoryMarks = new Map<string, HandlerMarks>();
  private readonly redeliveries: Redeliveries;

  constructor(private readonly host: InboundHost) {
    this.redeliveries = new Redeliveries(host.handlerRetryMs);
  }

  /** Stops every pending redelivery (the client closed). */
  stop(): void {
    this.redeliveries.stop();
  }

  /** Tasks enqueued and not finished. */
  private running = 0;

  /** Whether a task is enqueued or running. */
  get busy(): boolean {
    return this.running > 0;
  }

  /** Runs `task` after every task enqueued before it (frames are handled in arrival order). */
  enqueue(task: () => Promise<void>): Promise<void> {
    this.running++;
    const run = this.chain.then(task).finally(() => this.running--);
    this.chain = run.catch((err) => {
      console.error("tally client: inbound handler failed", err);
    });
    return this.chain;
  }

  /** Resolves once every task enqueued so far has run. */
  idle(): Promise<void> {
    return this.chain;
  }

  /**
   * One envelope from any path: the checks of 5.3, dedup (7), the handler, receipts (8.1). `ack`
   * acknowledges the relay's copy (acks mode); it is called once the envelope needs no second
   * delivery: handled, a duplicate, or dropped by the checks; never after a handler failed.
   */
  async receiveEnvelope(envelope: unknown, via: Delivery, ack: () => void = () => {}): Promise<void> {
    const { host } = this;
    const opened = await openEnvelopeWith(envelope, host.signer, host.pubkeyHex);
    if (!opened.ok && opened.reason === "signer_failed") {
      // Not a verdict on the envelope: not acked (the relay keeps it), tried again here soon.
      const env = envelope as { from_user_id: string; id: string };
      await host.events.emit("signer_failed", "open", opened.error);
      this.redeliveries.schedule(env.from_user_id, env.id, () => void this.enqueue(() => this.receiveEnvelope(envelope, via, ack)));
      return;
    }
    if (!opened.ok) {
      await host.events.emit("dropped", opened.reason, envelope);
      ack();
      return;
    }
    const inner = opened.inner as InnerMessage;
    const from = inner.from_user_id;
    // Opened: a retry after the signer failed is over for the kinds that are never run again here.
    if (from === host.npub || SELF_SYNC_TYPES.has(inner.type) || inner.type === RECEIPT_TYPE) this.redeliveries.cancel(from, inner.id);
    if (from === host.npub) {
      // Another device of ours (13.8): only sync messages on this path; no receipts (13.7);
      // sync messages stay out of the processed set (12.3), duplicates dropped by id.
      ack();
      if (SELF_SYNC_TYPES.has(inner.type) && host.sync.firstSight(inner)) {
        await host.events.emit("self", inner, via);
        await host.events.emit("sync_message", inner, via);
        await host.sync.onSyncMessage(inner);
      }
      return;
    }
    if (SELF_SYNC_TYPES.has(inner.type)) {
      // Friend sync (12): no processed set, never a receipt.
      ack();
      if (host.sync.firstSight(inner)) {
        await host.events.emit("sync_message", inner, via);
        await host.sync.onSyncMessage(inner);
      }
      return;
    }
    if (inner.type === RECEIPT_TYPE) {
      // A receipt never generates a receipt (8.1).
      await this.onReceipt(from, inner.payload);
      ack();
      return;
    }
    const seen = await this.processedResult(from, inner.id);
    if (seen !== undefined) {
      // Already processed: drop, but still receipt, repeating the original result (7.2, 8.1).
      this.redeliveries.cancel(from, inner.id);
      host.sync.noteHandled(inner);
      ack();
      await host.events.emit("duplicate", inner, via);
      await host.sendReceipt(from, inner.id, seen);
      return;
    }
    const handled = await this.handle(inner, via);
    if (!handled.ok) {
      // Not processed: no ack, no receipt; run again here soon (and the next copy is handled too).
      this.redeliveries.schedule(from, inner.id, () => void this.enqueue(() => this.receiveEnvelope(envelope, via, ack)));
      return;
    }
    this.redeliveries.cancel(from, inner.id);
    if (handled.result !== IGNORED) await host.appendLedger(innerToEntry(inner));
    await host.store.addProcessed(from, inner.id, Date.now(), handled.result);
    await this.dropMarks(from, inner.id, handled.marked);
    host.onHandled?.(inner);
    ack();
    await host.sendReceipt(from, inner.id, handled.result);
  }

  /**
   * The receipt result of (from, id) if it was processed. A record without a result was written
   * by an older version of this client before its handler ran, and the handler may never have
   * finished: such a message is handled again.
   */
  private async processedResult(from: string, id: string): Promise<string | undefined> {
    return (await this.host.store.getProcessed(from, id))?.result;
  }

  /**
   * Runs the app's handlers that apply (handlers.ts), skipping those marked as already returned;
   * a throw (or rejection) means the message was not processed, and the handlers that returned
   * before it are marked so the next run skips them.
   */
  private async handle(inner: InnerMessage, via: Delivery): Promise<Handled> {
    const { host } = this;
    const from = inner.from_user_id;
    const marks = await this.getMarks(from, inner.id);
    const marked = Object.keys(marks).length > 0;
    const results: unknown[] = [];
    let ran = 0;
    let refused = 0;
    for (const h of host.handlers.for(inner.type)) {
      if (Object.hasOwn(marks, h.key)) {
        results.push(marks[h.key]);
        ran++;
        continue;
      }
      let arg: InnerMessage = inner;
      if (h.schema) {
        const parsed = h.schema.safeParse(inner.payload);
        if (!parsed.success) {
          refused++;
          continue;
        }
        arg = { ...inner, payload: parsed.data };
      }
      try {
        const r = await (h.fn as (m: InnerMessage, v: Delivery) => unknown)(arg, via);
        marks[h.key] = typeof r === "string" ? r : null;
        results.push(r);
        ran++;
      } catch (err) {
        reportListenerError("message", err);
        if (Object.keys(marks).length > 0) await this.putMarks(from, inner.id, marks);
        host.sync.noteFailed(inner);
        await host.events.emit("handler_failed", inner, via, err);
        return { ok: false };
      }
    }
    host.sync.noteHandled(inner);
    return { ok: true, result: receiptResult(results, refused > 0 && ran === 0 ? IGNORED : PROCESSED), marked };
  }

  private async getMarks(from: string, id: string): Promise<HandlerMarks> {
    const { store } = this.host;
    const kept = store.getHandlerMarks ? await store.getHandlerMarks(from, id) : this.memoryMarks.get(`${from} ${id}`);
    return { ...kept };
  }

  private async putMarks(from: string, id: string, marks: HandlerMarks): Promise<void> {
    const { store } = this.host;
    if (store.putHandlerMarks) await store.putHandlerMarks(from, id, marks, Date.now());
    else this.memoryMarks.set(`${from} ${id}`, marks);
  }

  /** The message is processed: its marks go. */
  private async dropMarks(from: string, id: string, marked: boolean): Promise<void> {
    if (!marked) return;
    const { store } = this.host;
    if (store.deleteHandlerMarks) await store.deleteHandlerMarks(from, id);
    else this.memoryMarks.delete(`${from} ${id}`);
  }

  /** An inbound-like entry from sync (12.7): applied once through the handler, no receipt. False if it stays out of the ledger. */
  async applyFromSync(inner: InnerMessage, entry: LedgerEntry): Promise<boolean> {
    const { host } = this;
    let result = await this.processedResult(inner.from_user_id, inner.id);
    if (result === undefined) {
      const handled = await this.handle(inner, "sync");
      if (!handled.ok) return false;
      result = handled.result;
      this.redeliveries.cancel(inner.from_user_id, inner.id);
      if (result !== IGNORED) await host.appendLedger(entry);
      await host.store.addProcessed(inner.from_user_id, inner.id, Date.now(), result);
      await this.dropMarks(inner.from_user_id, inner.id, handled.marked);
      return result !== IGNORED;
    }
    host.sync.noteHandled(inner);
    if (result === IGNORED) return false;
    return host.appendLedger(entry);
  }

  /** A receipt for one of our messages (8.1, 8.2): it leaves the outbox. */
  async onReceipt(from: string, payload: unknown): Promise<void> {
    const p = (payload ?? {}) as { message_id?: unknown; result?: unknown };
    if (typeof p.message_id !== "string") return;
    const item = await this.host.store.getOutbox(p.message_id);
    if (item && item.to_user_id === from) {
      await this.host.store.deleteOutbox(p.message_id);
      await this.host.events.emit("receipt", p.message_id, p.result, from);
    }
  }

  /**
   * A JSON frame that arrived on a direct channel to `fromUserId` (6.1): an envelope, or a
   * plaintext transport-only receipt from that peer (3.2, 8.1). A plaintext receipt is taken only
   * when `fromUserId` says which peer's channel it came on (its only authentication is that
   * channel); without it the receipt is dropped (event `dropped`, reason
   * "plaintext_receipt_without_peer").
   */
  directFrame(data: string, fromUserId: string | undefined): Promise<void> {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(data);
    } catch {
      return Promise.resolve();
    }
    if (typeof msg !== "object" || msg === null) return Promise.resolve();
    if (msg.type === "peer_envelope") return this.enqueue(() => this.receiveEnvelope(msg, "direct"));
    if (msg.type === RECEIPT_TYPE && fromUserId === undefined) {
      return this.host.events.emit("dropped", "plaintext_receipt_without_peer", msg).then(() => undefined);
    }
    if (msg.type === RECEIPT_TYPE && fromUserId !== undefined && msg.from_user_id === fromUserId && msg.to_user_id === this.host.npub) {
      return this.enqueue(() => this.onReceipt(fromUserId, msg.payload));
    }
    return Promise.resolve();
  }
}

/** The ledger entry of a message received now. */
function innerToEntry(inner: InnerMessage): LedgerEntry {
  return innerToLedgerEntry(inner, new Date());
}
