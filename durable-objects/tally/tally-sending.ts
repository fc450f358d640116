// What one Tally user sends (docs/tally.md, "Envelopes"): a queue_peer_envelope from one of its
// devices is checked here (the envelope's shape and size, its sender), then handed to the user's
// other devices (self-addressed) or to its recipient's object, and answered `queued`. A first envelope to a user takes
// a token of the client's bucket for new names and notes the recipient as a contact
// (tally-contacts.ts); each is checked against the sender's share of the Tally total
// (sender-share.ts) and charged what the recipient kept; envelopes to one recipient go in batches
// (envelope-batcher.ts). A recipient that holds no storage has no alarm: after the burst, this
// user's alarm asks it to report what it counted (its reportNow()).
import type { Deferred } from "../base/deferred";
import { TALLY_LIMITS } from "../../shared/limits";
import { utf8ByteLength } from "../../shared/encoding";
import { rawMember } from "../../shared/json-raw";
import { formatIssue, type ErrorCode } from "../../shared/errors";
import { npubDecode } from "../../shared/tally/keys";
import { peerEnvelopeSchema } from "../../shared/tally/envelope";
import type { ServerMessage } from "../../shared/tally/messages";
import type { Meta } from "../base/meta";
import { newNameWaitMs } from "../../server/name-requests";
import { log } from "../../server/log";
import { EnvelopeBatcher, type BatchAnswer, type Delivery, type EnvelopeCall } from "./envelope-batcher";
import { SenderShare } from "./sender-share";
import type { TallyContacts } from "./tally-contacts";

/** Another user's object, as sending calls it. */
interface RecipientUser {
  deliverAll(envelopes: EnvelopeCall[]): Promise<BatchAnswer>;
  reportNow(): Promise<void>;
}

interface SendingHost {
  /** This object's user (64 hex). */
  me(): string;
  /** The user's online devices, but `except`. */
  devices(except?: string): Array<{ ws: WebSocket }>;
  send(ws: WebSocket, msg: ServerMessage): boolean;
  sendRaw(ws: WebSocket, data: string): boolean;
  sendError(ws: WebSocket, code: ErrorCode, message: string, id?: string): void;
  /** Counts envelopes handed to devices (the status page). */
  countDeliveries(n: number): void;
  waitUntil(p: Promise<unknown>): void;
  /** The clock the client buckets run on (the base's rateClock). */
  rateClock(): number;
  /** The recipient `hex`'s object. */
  recipient(hex: string): RecipientUser;
  /** Whether this user holds nothing yet (its first row then charges its database too). */
  holdsNothing(): boolean;
}

/** Recipients of one burst asked to report, at most (the rest report at their next entry). */
const ASKED_PER_BURST = 64;

export class TallySending {
  /** This user's share, as a sender, of the relay's Tally total across its recipients (storage.sender_share). */
  private readonly share: SenderShare;
  /** Envelopes on their way to other users' objects, in batches. */
  private readonly batcher = new EnvelopeBatcher(
    (toHex, batch) => this.host.recipient(toHex).deliverAll(batch),
    (toHex) => this.askToReport(toHex),
  );
  /** Recipients of this burst that hold no storage (no alarm of their own): asked to report after it. */
  private readonly toAsk = new Set<string>();
  private readonly askLater;

  constructor(
    private readonly host: SendingHost,
    private readonly contacts: TallyContacts,
    deferred: Deferred,
    meta: Meta,
    tallyTotal: number,
  ) {
    this.share = new SenderShare(deferred, meta, tallyTotal);
    this.askLater = deferred.part(() => this.askRecipients());
  }

  /** A queue_peer_envelope from the user's device `from.deviceId`, as client `from.client`: checked, handed on, answered. */
  async queueEnvelope(
    ws: WebSocket,
    envelope: Record<string, unknown>,
    from: { deviceId: string; client: string },
    frame: string,
  ): Promise<void> {
    const id = typeof envelope.id === "string" ? envelope.id : undefined;
    const checked = peerEnvelopeSchema.safeParse(envelope);
    if (!checked.success) {
      return this.host.sendError(ws, "invalid_message", `envelope: ${formatIssue(checked.error, "envelope")}`, id);
    }
    const env = checked.data;
    const raw = rawMember(frame, "envelope")!;
    const bytes = utf8ByteLength(raw);
    if (bytes > TALLY_LIMITS.max_envelope_bytes) {
      return this.host.sendError(
        ws,
        "envelope_too_large",
        `envelope is ${bytes} bytes; at most ${TALLY_LIMITS.max_envelope_bytes}`,
        env.id,
      );
    }
    const me = this.host.me();
    const fromHex = npubDecode(env.from_user_id);
    if (fromHex !== me) {
      return this.host.sendError(ws, "forbidden_sender", "from_user_id is not the registered user", env.id);
    }
    const toHex = npubDecode(env.to_user_id);
    let status: Delivery;
    if (toHex === me) {
      // Self-addressed (13.8): to the sender's other online devices only, never stored.
      let n = 0;
      for (const d of this.host.devices(from.deviceId)) if (this.host.sendRaw(d.ws, raw)) n++;
      this.host.countDeliveries(n);
      status = n > 0 ? "delivered" : "not_stored";
    } else {
      const sent = await this.send(toHex, raw, bytes, fromHex, env.id, from.client);
      if (typeof sent === "object")
        return this.host.sendError(ws, "rate_limited", `too many new correspondents from this client; retry in ${sent.wait} s`, env.id);
      status = sent;
    }
    if (status === "storage_full") {
      return this.host.sendError(
        ws,
        "storage_full",
        "the relay holds all the envelopes it may (storage.tally_bytes): not stored; send it again later",
        env.id,
      );
    }
    this.host.send(ws, { type: "queued", id: env.id, to_user_id: env.to_user_id, status });
  }

  /**
   * Sends an envelope of `bytes` (its JSON `raw`) from this user (`fromHex`) to another user
   * (`toHex`), as client `client`: what the recipient's object did with it, or the seconds to
   * wait when this client started too many new correspondents (nothing sent).
   */
  private async send(
    toHex: string,
    raw: string,
    bytes: number,
    fromHex: string,
    id: string,
    client: string,
  ): Promise<Delivery | { wait: number }> {
    // A first envelope to a user may start that user's object: it takes a token of the client's
    // bucket for new names (common.client_object_requests_*), and costs the share its rows and database.
    // (Envelopes sent while the first one's note is under way are not first: one row, one database.)
    const first = !this.contacts.wroteOrNoting(toHex);
    const wait = first ? newNameWaitMs(client, this.host.rateClock()) : 0;
    if (wait > 0) return { wait: Math.ceil(wait / 1000) };
    // The first envelope costs the sender's contact row (and its database, when it holds nothing
    // yet) whatever the answer, and the recipient's database only when it is stored.
    const extra = first ? SenderShare.firstCost(this.host.holdsNothing()) : 0;
    const theirs = first ? SenderShare.recipientFirstCost() : 0;
    const cost = SenderShare.cost(bytes) + extra + theirs;
    // Past its share (the key's, or its address's) the envelope goes to online devices only (else
    // queued not_stored), and no contact row is made for it.
    const mayStore = this.share.take(cost, client);
    // Noted beside the delivery, not before it: a note that waits on the ledger never holds up the envelope.
    if (mayStore)
      this.host.waitUntil(this.contacts.noteContact(toHex).catch((err) => log.error("tally: a contact could not be noted", { err })));
    let status: Delivery | undefined;
    try {
      status = await this.batcher.deliver(toHex, raw, fromHex, id, mayStore);
      return status;
    } finally {
      if (mayStore) this.share.settle(cost, status === "stored" ? cost : extra, client);
    }
  }

  /** A recipient answered that it holds no storage: asked to report after the burst. */
  private askToReport(toHex: string): void {
    if (this.toAsk.size < ASKED_PER_BURST) this.toAsk.add(toHex);
    this.askLater.later();
  }

  private async askRecipients(): Promise<void> {
    const hexes = [...this.toAsk];
    this.toAsk.clear();
    await Promise.all(
      hexes.map((hex) =>
        this.host
          .recipient(hex)
          .reportNow()
          .catch((err: unknown) => log.warn("tally: a recipient could not be asked to report", { err })),
      ),
    );
  }
}
