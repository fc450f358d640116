// What a Tally client tells the app (the Tally protocol): the inner message as the app sees it, how it
// arrived, and the client's events, with the small typed emitter they go through.
import type { QueuedStatus } from "../../shared/tally/messages";
import type { LedgerEntry } from "../../shared/tally/entry";
import { awaitListener, Listeners, type AnyListener } from "../listeners";

/** An inner message as the application sees it (the Tally protocol §3). */
export interface InnerMessage {
  id: string;
  type: string;
  from_user_id: string;
  to_user_id: string;
  created_at: string;
  payload?: unknown;
  [k: string]: unknown;
}

/** How a message reached this client: the relay, a direct channel, or ledger sync (12). */
export type Delivery = "relay" | "direct" | "sync";

export interface TallyClientEvents {
  /**
   * A new application message (not a receipt), after the checks of 5.3 and dedup. The first
   * string a handler returns is the receipt's result (8.1); "ignored" keeps it out of the ledger.
   * A handler that throws (or rejects) leaves the message unprocessed: the client runs it again
   * soon (see handler_failed), skipping the handlers that had returned (TallyClient.handle).
   */
  message: (inner: InnerMessage, via: Delivery) => void | Promise<void> | string | Promise<string>;
  /**
   * A `message` handler threw (or rejected): the message is not processed. No receipt is sent and
   * the relay's copy is not acked; the client runs it again after handlerRetryMs (doubling up to
   * 30 s), and any copy that arrives meanwhile is handled too.
   */
  handler_failed: (inner: InnerMessage, via: Delivery, error: unknown) => void;
  /** With `tabs`: another client of this user (the leader) handled a message; this one's handlers do not run for it. */
  handled_elsewhere: (inner: InnerMessage) => void;
  /** A copy of an application message already processed (another path's copy, 7): dropped, receipted again. */
  duplicate: (inner: InnerMessage, via: Delivery) => void;
  /** A receipt for one of our messages arrived; it left the outbox. */
  receipt: (messageId: string, result: unknown, from: string) => void;
  /** An outbox message was given up on before the recipient could forget its id (7, 8.2). */
  expired: (messageId: string, to: string) => void;
  /** A self-addressed message from another of our devices (sync_hello / sync_data). */
  self: (inner: InnerMessage, via: Delivery) => void | Promise<void>;
  /** Any sync message (sync_hello or sync_data) from a friend, a peer under allowance or an own device, before it is handled. */
  sync_message: (inner: InnerMessage, via: Delivery) => void;
  /** A relay registered this client (with several relays, once per relay; `relay` is its URL as given). */
  registered: (deviceId: string, queued: number, relay: string) => void;
  drained: (relay: string) => void;
  queued: (id: string, status: QueuedStatus, relay: string) => void;
  peer_connect: (userId: string, deviceId: string) => void;
  peer_disconnect: (userId: string, deviceId: string) => void;
  signal: (userId: string, deviceId: string, signal: unknown) => void;
  /** An envelope that failed the receiver's checks and was dropped, with the reason. */
  dropped: (reason: string, envelope: unknown) => void;
  /**
   * The signer failed (a browser extension refused, was locked, or gave a bad answer): `what` the
   * client was doing ("open": an envelope, then kept and tried again, never dropped; "receipt",
   * "sync", "register"), and the error.
   */
  signer_failed: (what: "open" | "receipt" | "sync" | "register", error: unknown) => void;
  relay_error: (code: string, message: string, id: string | undefined, relay: string) => void;
  /** A new ledger entry (outbound or inbound, 12). */
  ledger: (entry: LedgerEntry) => void;
  /** A sync answer from `from` was applied: `applied` new entries. */
  synced: (from: string, applied: number) => void;
  /** 12.8: an unknown peer became a friend within its allowance and is kept. */
  peer_kept: (userId: string) => void;
  /** 12.8: an unknown peer's allowance ran out (or the relay connection ended first); every connection to it is closed. */
  peer_dropped: (userId: string) => void;
  /** A relay connection ended (it reconnects unless closed for good); `relay` is its URL as given. */
  close: (code: number, reason: string, relay: string) => void;
}

/** Typed listeners; emit awaits each in turn and returns what they returned. */
export class Emitter<E extends { [K in keyof E]: AnyListener }> {
  private readonly listeners = new Listeners<E>();

  on<K extends keyof E>(event: K, fn: E[K]): () => void {
    return this.listeners.on(event, fn);
  }

  async emit<K extends keyof E>(event: K, ...args: Parameters<E[K]>): Promise<unknown[]> {
    const results: unknown[] = [];
    // A listener that throws is reported and counts as having returned nothing (clients/listeners.ts).
    for (const fn of this.listeners.of(event)) results.push(await awaitListener(String(event), fn, ...args));
    return results;
  }

  /** Like emit, but the first listener that throws (or rejects) stops it, and emitStrict throws that error. */
  async emitStrict<K extends keyof E>(event: K, ...args: Parameters<E[K]>): Promise<unknown[]> {
    const results: unknown[] = [];
    for (const fn of this.listeners.of(event)) results.push(await fn(...args));
    return results;
  }
}
