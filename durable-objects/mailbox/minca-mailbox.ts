// One Minca mailbox (docs/mailbox.md, the Minca protocol §4.2 and §4.4): the items posted to one topic,
// the push receivers woken by each new item, and the wakes still to send. HTTP-only: the Worker
// validates the request with shared/mailbox and calls these methods over RPC. An item is in
// SQLite before post() returns, so the 201 only leaves once it is stored; wakes are written in
// the same transaction and sent afterwards by the alarm (mailbox-wakes.ts), so pushing never
// delays the 201.
import { StoredObject } from "../base/stored-object";
import { Waiters } from "../base/waiters";
import { fail, ok, type ObjectResult } from "../base/result";
import { StorageLease } from "../relay/storage-lease";
import { MIGRATIONS } from "../../migrations/index";
import { toArrayBuffer, utf8ByteLength } from "../../shared/encoding";
import { MAILBOX_WAKE_RULES, MailboxWakes, type Wake } from "./mailbox-wakes";
import { PushOutbox } from "../push/push-outbox";
import { relayOutboxDeps } from "../push/relay-outbox";
import { MAILBOX_LIMITS, MINCA_HOST_LIMITS, STORAGE_LIMITS } from "../../shared/limits";
import { endpointPolicyOf } from "../../server/webpush/endpoint";
import type { ReceiverRefusal } from "../../server/webpush/receivers";
import { MailboxReceivers } from "./mailbox-receivers";
import { buildPage, type Page, type PageQuery, type Posted, type ReceiverAdded, type StoredItem } from "../../shared/mailbox/messages";
import { subscriptionBytes, type PushSubscriptionJSON } from "../../shared/webpush/subscription";
import { log } from "../../server/log";
import { rowBytes } from "../../shared/storage";
import { objectOf } from "../../server/objects";

type Limited = "read" | "write";

interface ItemRow extends Record<string, SqlStorageValue> {
  seq: number;
  at: number;
  until: number;
  blob: ArrayBuffer;
}

const nowSeconds = (ms = Date.now()) => Math.floor(ms / 1000);

export class MincaMailbox extends StoredObject<Env, Limited> {
  /** Long-polls waiting for the next item. */
  protected readonly waiters = new Waiters();
  /** The wakes still to send (the `deliveries` table). */
  private readonly wakes: MailboxWakes;
  /** Sending them. */
  private readonly outbox: PushOutbox<Wake>;
  /** The push receivers (the `receivers` table). */
  private readonly registry: MailboxReceivers;
  /** This topic's share of the relay-wide mailbox total (docs/hostile.md, "Relay-wide totals"). */
  private readonly lease: StorageLease;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, {
      migrations: MIGRATIONS.MincaMailbox,
      // Counts for the status page: items held, items posted (messages), items and wakes handed out (deliveries).
      protocol: "minca",
      nameKey: "topic",
      clientRates: {
        read: { burst: MAILBOX_LIMITS.read_burst, perSecond: MAILBOX_LIMITS.read_per_second },
        write: { burst: MAILBOX_LIMITS.write_burst, perSecond: MAILBOX_LIMITS.write_per_second },
      },
    });
    this.lease = new StorageLease(ctx, this.deferred, env, "mailbox", this.schema, () => this.heldBytes());
    this.holdLease(this.lease);
    this.wakes = new MailboxWakes(ctx.storage, () => this.name);
    this.registry = new MailboxReceivers(ctx.storage.sql);
    this.outbox = new PushOutbox(
      this.wakes,
      MAILBOX_WAKE_RULES,
      relayOutboxDeps(
        env,
        (url, init) => this.pushFetch(url, init),
        () => this.stats.count("deliveries"),
      ),
    );
  }

  /** What wakes go out with: the runtime's fetch (the worker tests' subclass answers for a push service). */
  protected pushFetch(url: string, init: RequestInit): Promise<Response> {
    return fetch(url, init);
  }

  protected statsGauges() {
    return { mailbox_items: this.schema.exists ? this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM items").one().n : 0 };
  }

  // ---- RPC ------------------------------------------------------------------------------------

  /**
   * Stores one item (until already resolved by shared/mailbox) and answers its seq. What the
   * topic then holds is charged against its lease of the relay-wide mailbox total in the same
   * transaction as the write (docs/hostile.md, "Relay-wide totals"): over the lease, nothing is
   * kept, the lease is extended once, and a total with no room answers 507 storage_full.
   * `first`: the item is the topic's first row, so it made the topic's database (the Worker
   * charges that to the client's share too); not part of the answer.
   */
  async post(blob: Uint8Array, until: number, client: string): Promise<ObjectResult<Posted & { first: boolean }>> {
    const limited = this.limit("write", client, `too many writes on this mailbox; retry later`);
    if (limited) return limited;
    const now = Date.now();
    const r = await this.lease.store(rowBytes(blob.length), () => {
      this.sweep(now);
      const first = this.heldBytes() === 0;
      const seq = this.sql
        .exec<{ seq: number }>(
          "INSERT INTO items (at, until, bytes, blob) VALUES (?, ?, ?, ?) RETURNING seq",
          nowSeconds(now),
          until,
          blob.length,
          toArrayBuffer(blob),
        )
        .one().seq;
      // One read of the items' sums decides the bounds (within them, the usual case, the evicting
      // deletes would remove nothing) and, with nothing evicted, is what the items hold.
      const items = this.sql.exec<{ n: number; total: number }>("SELECT COUNT(*) AS n, TOTAL(bytes) AS total FROM items").one();
      const over = items.n > MAILBOX_LIMITS.max_items || items.total > MAILBOX_LIMITS.max_bytes;
      if (over) this.evictOverBounds();
      this.sql.exec("INSERT INTO deliveries (receiver_id, seq, attempts, next_at) SELECT id, ?, 0, ? FROM receivers", seq, now);
      return { value: { seq, first }, held: this.heldBytes(over ? undefined : items) };
    });
    if (!r.stored) return fail(507, "storage_full", "the relay's mailboxes hold all they may (storage.mailbox_bytes); nothing was stored");
    this.waiters.wakeAll();
    this.stats.count("messages");
    const next = this.nextAlarm();
    if (next !== null) await this.wakeAt(next);
    return ok({ seq: r.value.seq, until, first: r.value.first });
  }

  /** A page of live items after `after`; with `wait`, an empty answer is held until one arrives. */
  async page(q: PageQuery, client: string): Promise<ObjectResult<Page>> {
    const limited = this.limit("read", client, `too many reads on this mailbox; retry later`);
    if (limited) return limited;
    const deadline = Date.now() + q.wait * 1000;
    const links = q.after === 0 ? await this.hostLinks() : [];
    for (;;) {
      const page = this.readPage(q.after, q.limit, links);
      const left = deadline - Date.now();
      this.stats.count("deliveries", page.items.length);
      if (page.items.length > 0 || left <= 0) return ok(page);
      await this.waiters.wait(left);
    }
  }

  /** One live item's blob, or null. */
  async item(seq: number, client: string): Promise<ObjectResult<Uint8Array | null>> {
    const limited = this.limit("read", client, `too many reads on this mailbox; retry later`);
    if (limited) return limited;
    if (!this.schema.exists) return ok(null);
    const row = this.sql
      .exec<ItemRow>("SELECT seq, at, until, blob FROM items WHERE seq = ? AND until > ?", seq, nowSeconds())
      .toArray()[0];
    return ok(row ? new Uint8Array(row.blob) : null);
  }

  /**
   * RPC: registers a receiver by the receiver registry's rules (mailbox-receivers.ts,
   * server/webpush/receivers.ts): the same endpoint again with the same keys keeps its id (a
   * browser registering twice); with other keys it is refused (409 receiver_exists): only the
   * client that registered it holds its id, and only it may replace it, by deleting it first
   * (docs/mailbox.md). `requestHost`: the host the registering request reached (the push-endpoint
   * rule refuses it). `first`: the receiver is the topic's first row, so it made the topic's
   * database (the Worker charges that to the client's share too); not part of the answer.
   */
  async addReceiver(
    sub: PushSubscriptionJSON,
    client: string,
    requestHost?: string,
  ): Promise<ObjectResult<ReceiverAdded & { first: boolean }>> {
    const limited = this.limit("write", client, `too many writes on this mailbox; retry later`);
    if (limited) return limited;
    const policy = endpointPolicyOf(this.settings, requestHost);
    // The receiver's row is charged like an item (docs/hostile.md, "Relay-wide totals"): checked and
    // written in one step through the lease; a total with no room answers 507 storage_full.
    const size = subscriptionBytes(sub);
    const r = await this.lease.store<ObjectResult<ReceiverAdded & { first: boolean }>>(rowBytes(size), () => {
      const first = this.heldBytes() === 0;
      const added = this.registry.add(sub, policy);
      if (!added.ok) return { value: receiverRefused(added) };
      if (!added.added) return { value: ok({ id: added.id, first: false }) };
      return { value: ok({ id: added.id, first }), held: this.heldBytes() };
    });
    if (!r.stored) return fail(507, "storage_full", "the relay's mailboxes hold all they may (storage.mailbox_bytes); nothing was stored");
    return r.value;
  }

  async removeReceiver(id: string, client: string): Promise<ObjectResult<null>> {
    const limited = this.limit("write", client, `too many writes on this mailbox; retry later`);
    if (limited) return limited;
    const gone = this.schema.exists && this.lease.free(() => this.wakes.forgetReceiver(id));
    if (!gone) return fail(404, "not_found", "no such receiver");
    return ok(null);
  }

  // ---- a Minca host's links (docs/hosting.md) ------------------------------------------------------

  /**
   * `account` (a carried account) holds a live link of this topic. False when the topic serves
   * max_link_accounts_per_topic accounts already, or the relay's mailbox total has no room for
   * the row (it is charged like an item).
   */
  async linkAccount(account: string): Promise<boolean> {
    // Every fetch of the topic asks each linked account: at most max_link_accounts_per_topic of them.
    const r = await this.lease.store(rowBytes(utf8ByteLength(account)), () => {
      const known = this.schema.exists && this.sql.exec("SELECT 1 FROM link_accounts WHERE account = ?", account).toArray().length > 0;
      if (known) return { value: true };
      if (this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM link_accounts").one().n >= MINCA_HOST_LIMITS.max_link_accounts_per_topic)
        return { value: false };
      this.sql.exec("INSERT INTO link_accounts (account) VALUES (?)", account);
      return { value: true, held: this.heldBytes() };
    });
    return r.stored && r.value;
  }

  /** `account` holds no live link of this topic any more. */
  unlinkAccount(account: string): void {
    if (!this.schema.exists) return;
    this.lease.free(() => this.sql.exec("DELETE FROM link_accounts WHERE account = ?", account));
  }

  /** The links of this topic each carrying account serves (its 64 most recently written live ones). */
  private async hostLinks(): Promise<StoredItem[]> {
    const topic = this.name;
    if (!this.schema.exists || topic === null) return [];
    const accounts = this.sql.exec<{ account: string }>("SELECT account FROM link_accounts ORDER BY account").toArray();
    const out: StoredItem[] = [];
    for (const { account } of accounts) {
      try {
        const stub = objectOf(this.env, "MINCA_ACCOUNT", account);
        // A topic is computed from its blob: once one account served it, the others only say until when.
        for (const l of await stub.linksFor(topic, out.length === 0)) {
          if (l.blob !== null) out.push({ seq: 0, at: l.at, until: l.until, blob: l.blob });
          else if (out[0]) out[0].until = Math.max(out[0].until, l.until);
        }
      } catch (err) {
        log.error("mailbox: an account's links could not be had", { err });
      }
    }
    return out;
  }

  /** RPC, the admin API's edge.purgetopic: deletes every item (and its unsent wakes); the count deleted. Receivers stay. */
  async purge(): Promise<number> {
    if (!this.schema.exists) return 0;
    let n = 0;
    this.lease.free(() => {
      n = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM items").one().n;
      this.sql.exec("DELETE FROM deliveries");
      this.sql.exec("DELETE FROM items");
    });
    return n;
  }

  // ---- alarm: expiry sweep and wakes ----------------------------------------------------------

  protected async onAlarm(now: number): Promise<number | null> {
    if (!this.schema.exists) return null;
    this.lease.free(() => this.sweep(now));
    await this.outbox.sendDue();
    return this.nextAlarm();
  }

  // ---- internals ------------------------------------------------------------------------------

  /** Deletes expired items (and their unsent wakes). */
  private sweep(nowMs: number): void {
    const now = nowSeconds(nowMs);
    this.sql.exec("DELETE FROM deliveries WHERE seq IN (SELECT seq FROM items WHERE until <= ?)", now);
    this.sql.exec("DELETE FROM items WHERE until <= ?", now);
  }

  /**
   * What the topic holds against the relay-wide mailbox total: every row it stores, each charged
   * storage.row_overhead_bytes plus its bytes (items, receivers, wakes still to send, linked
   * accounts; docs/mailbox.md, "Storage").
   */
  private heldBytes(items?: { n: number; total: number }): number {
    const row = STORAGE_LIMITS.row_overhead_bytes;
    if (items !== undefined) return items.total + row * items.n + this.heldBesideItems();
    return this.sql.exec<{ b: number }>("SELECT TOTAL(bytes) + ? * COUNT(*) AS b FROM items", row).one().b + this.heldBesideItems();
  }

  /** What the receivers, the wakes still to send and the linked accounts hold (a part of heldBytes()). */
  private heldBesideItems(): number {
    const row = STORAGE_LIMITS.row_overhead_bytes;
    return this.sql
      .exec<{ b: number }>(
        `SELECT (SELECT TOTAL(LENGTH(CAST(endpoint AS BLOB)) + LENGTH(CAST(p256dh AS BLOB)) + LENGTH(CAST(auth AS BLOB))) + ? * COUNT(*) FROM receivers)
              + (SELECT ? * COUNT(*) FROM deliveries)
              + (SELECT TOTAL(LENGTH(CAST(account AS BLOB))) + ? * COUNT(*) FROM link_accounts) AS b`,
        row,
        row,
        row,
      )
      .one().b;
  }

  /** Evicts the oldest items while the topic holds more than its count or byte bound. */
  private evictOverBounds(): void {
    this.sql.exec(
      `DELETE FROM items WHERE seq IN (
         SELECT seq FROM items ORDER BY seq
          LIMIT MAX(0, (SELECT COUNT(*) FROM items) - ?))`,
      MAILBOX_LIMITS.max_items,
    );
    this.sql.exec(
      `DELETE FROM items WHERE seq <= (
         SELECT COALESCE(MAX(seq), 0) FROM (
           SELECT seq, SUM(bytes) OVER (ORDER BY seq DESC) AS newer FROM items) WHERE newer > ?)`,
      MAILBOX_LIMITS.max_bytes,
    );
    this.sql.exec("DELETE FROM deliveries WHERE seq < (SELECT COALESCE(MIN(seq), 0) FROM items)");
  }

  private readPage(after: number, limit: number, links: StoredItem[] = []): Page {
    if (!this.schema.exists) return buildPage([], after, limit, null, links);
    const now = nowSeconds();
    const rows = this.sql
      .exec<ItemRow>("SELECT seq, at, until, blob FROM items WHERE seq > ? AND until > ? ORDER BY seq LIMIT ?", after, now, limit + 1)
      .toArray()
      .map((r): StoredItem => ({ seq: r.seq, at: r.at, until: r.until, blob: new Uint8Array(r.blob) }));
    const oldest = this.sql.exec<{ s: number | null }>("SELECT MIN(seq) AS s FROM items WHERE until > ?", now).one().s;
    return buildPage(rows, after, limit, oldest, links);
  }

  /** The next expiry or the next wake due, whichever is first. */
  private nextAlarm(): number | null {
    const nextUntil = this.sql.exec<{ t: number | null }>("SELECT MIN(until) AS t FROM items").one().t;
    const nextWake = this.wakes.nextDue();
    const times = [nextUntil === null ? null : nextUntil * 1000, nextWake].filter((t): t is number => t !== null);
    return times.length === 0 ? null : Math.min(...times);
  }
}

/** A registry refusal in the mailbox's HTTP answers (docs/mailbox.md). */
function receiverRefused(r: ReceiverRefusal): ObjectResult<never> {
  if (r.code === "invalid_endpoint") return fail(400, "invalid_endpoint", r.detail);
  return fail(409, r.code === "receiver_exists" ? "receiver_exists" : "too_many_receivers", r.detail);
}
