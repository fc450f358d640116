// Sending (the Tally protocol 3, 6.2, 9.5): a message is signed and sealed once, kept in the
// outbox until its receipt arrives, and handed to a direct channel, the relay, or both; the
// outbox's own questions (a message's state, cancel) are answered here too. TallyClient
// delegates its sending methods to this.
import { sealEnvelopeWith, type PeerEnvelope } from "../../shared/tally/envelope";
import { npubDecode } from "../../shared/tally/keys";
import { signInnerWith } from "../../shared/tally/proof";
import type { TallySigner } from "../../shared/tally/signer";
import { innerToLedgerEntry, type LedgerEntry } from "../../shared/tally/entry";
import { bytesToHex, randomBytes } from "../../shared/encoding";
import type { OutboxItem, TallyStore } from "./store";
import type { OutboxRetry } from "./outbox";
import type { Paths } from "./paths";
import type { SendOptions } from "./options";
import type { Emitter, InnerMessage, TallyClientEvents } from "./events";
import type { MessageState, Tracked, Tracking } from "./tracking";
import type { TabCoordinator } from "./tabs";

/** What sending needs of the client. */
interface SenderHost {
  npub: string;
  pubkeyHex: string;
  /** Signs and seals; every call is awaited, so nothing is sent before it is signed and stored. */
  signer: TallySigner;
  store: TallyStore;
  outbox: OutboxRetry;
  tracking: Tracking;
  paths: Paths;
  /** The tab coordinator, once the client joined its tabs. */
  tabs(): TabCoordinator | undefined;
  appendLedger(entry: LedgerEntry): Promise<boolean>;
  /** The signer failed on a message that is not kept (the `signer_failed` event). */
  signerFailed(what: "receipt" | "sync", error: unknown): Promise<void>;
}

export class Sender {
  /** `send` calls whose writes are under way (close() waits for them). */
  readonly pending = new Set<Promise<string>>();

  constructor(private readonly h: SenderHost) {}

  private buildInner(to: string, type: string, payload: unknown, id?: string): InnerMessage {
    npubDecode(to); // throws on a bad npub
    return { id: id ?? newMessageId(), type, from_user_id: this.h.npub, to_user_id: to, created_at: new Date().toISOString(), payload };
  }

  /** A message signed and sealed for `to`, not kept (sync messages, receipts, own devices). */
  async seal(to: string, type: string, payload: unknown): Promise<PeerEnvelope> {
    return (await this.signAndSeal(this.buildInner(to, type, payload))).envelope;
  }

  /** A message's tracking and retries end with its receipt or its expiry (the tabs hear of receipts). */
  follow(events: Emitter<TallyClientEvents>): void {
    const { tracking, outbox } = this.h;
    events.on("receipt", (id, result, from) => {
      this.h.tabs()?.receipt(id, result, from);
      tracking.onReceipt(id, result, from);
      outbox.forget(id);
    });
    events.on("expired", (id) => {
      tracking.onEnded(id, "expired");
      outbox.forget(id);
    });
  }

  /**
   * A message (receipt, sync) signed and sealed, or undefined when the signer failed (reported
   * as `signer_failed`): a receipt is sent again with the next copy, sync again with the next presence.
   */
  async sealOrReport(what: "receipt" | "sync", to: string, type: string, payload: unknown): Promise<PeerEnvelope | undefined> {
    try {
      return await this.seal(to, type, payload);
    } catch (err) {
      await this.h.signerFailed(what, err);
      return undefined;
    }
  }

  private async signAndSeal(inner: InnerMessage): Promise<{ signed: InnerMessage; envelope: PeerEnvelope }> {
    const { signer, pubkeyHex } = this.h;
    const signed = await signInnerWith(inner, signer, pubkeyHex);
    return { signed, envelope: await sealEnvelopeWith(signed, signer, pubkeyHex) };
  }

  send(to: string, type: string, payload: unknown, opts: SendOptions = {}): Promise<string> {
    const sending = this.sendNow(to, type, payload, opts);
    this.pending.add(sending);
    void sending.then(
      () => this.pending.delete(sending),
      () => this.pending.delete(sending),
    );
    return sending;
  }

  private async sendNow(to: string, type: string, payload: unknown, opts: SendOptions): Promise<string> {
    const h = this.h;
    if (to === h.npub) throw new Error("use sendToOwnDevices for self-addressed messages");
    const inner = this.buildInner(to, type, payload, opts.id);
    const { signed, envelope } = await this.signAndSeal(inner);
    const now = Date.now();
    // Claimed for this session before it is stored, and its backoff counted from now, so neither
    // the flush that follows a registration nor the retry timer sends it a second time while this
    // call is still on its way to the relay.
    const item: OutboxItem = { id: inner.id, to_user_id: to, envelope, created_at: now, attempts: 0, last_attempt_at: now };
    h.outbox.claim(item.id);
    h.tracking.begin(item.id);
    await h.store.putOutbox(item);
    await h.appendLedger(innerToLedgerEntry(signed, new Date(now)));
    const paths = opts.paths ?? "auto";
    const sentDirect = paths !== "relay" && h.paths.sendDirect(to, envelope) > 0;
    if (sentDirect) h.tracking.sentDirect(item.id);
    // The relay is the fallback (6.2); "both" races the paths (9.5). With no receipt, the retry
    // timer hands the message to the relay later in any case.
    if (paths === "both" || paths === "relay" || (paths === "auto" && !sentDirect)) await h.outbox.tryQueue(item);
    const tabs = h.tabs();
    if (tabs && !tabs.leader) tabs.sent(item); // the leader sends it
    return inner.id;
  }

  async sendTracked(to: string, type: string, payload: unknown, opts: SendOptions = {}): Promise<Tracked> {
    const id = opts.id ?? newMessageId();
    this.h.tracking.begin(id);
    const tracked = this.h.tracking.track(id);
    await this.send(to, type, payload, { ...opts, id });
    return tracked;
  }

  async messageState(id: string): Promise<MessageState> {
    return this.h.tracking.state(id, await this.h.store.getOutbox(id));
  }

  async outboxState(): Promise<Array<{ id: string; to: string; created_at: number } & MessageState>> {
    return (await this.h.store.listOutbox()).map((item) => ({
      id: item.id,
      to: item.to_user_id,
      created_at: item.created_at,
      ...this.h.tracking.state(item.id, item),
    }));
  }

  async cancel(id: string): Promise<boolean> {
    const { store, tracking, outbox } = this.h;
    const item = await store.getOutbox(id);
    if (!item || !tracking.cancellable(item) || !outbox.block(id)) return false;
    const now = await store.getOutbox(id);
    if (!now || !tracking.cancellable(now)) {
      outbox.unblock(id);
      return false;
    }
    await store.deleteOutbox(id);
    outbox.forget(id);
    tracking.onEnded(id, "cancelled");
    return true;
  }

  async outboxEnvelope(id: string): Promise<PeerEnvelope | undefined> {
    return (await this.h.store.getOutbox(id))?.envelope;
  }

  async sendToOwnDevices(type: string, payload: unknown): Promise<string> {
    const envelope = await this.seal(this.h.npub, type, payload);
    this.h.paths.queueEverywhere(envelope);
    return envelope.id;
  }
}

/** A random 128-bit message id (the Tally protocol §3.1), as 32 hex characters. */
export function newMessageId(): string {
  return bytesToHex(randomBytes(16));
}
