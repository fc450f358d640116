// The queue of one Tally user (the Tally protocol section 6, docs/hostile.md and docs/tally.md): the envelopes stored
// for the user while no device takes them, idempotent by (sender, id), bounded per sender by count
// and by bytes and as a whole (server/tally/queue-bounds.ts: a full queue makes room for a contact
// by evicting strangers' oldest and refuses strangers), expiring after
// queue_ttl_days, and charged against the user's lease of the relay-wide total (storage.tally_bytes)
// in the same transaction as each store. The `queue` table's only writer; TallyUser (tally-user.ts)
// holds the sockets and decides when to store, push and delete.
// Rows written are what storage is billed by (each index entry one more): storing an envelope
// writes its one row (the table is keyed by sender and id, with no other index: migration
// 0003_queue_one_row), and the queue's count, bytes and last seq, which every store needs, are
// read once per instance and then kept in memory with each store, not summed from the table each
// time. A delete (ack, flush, expiry, purge, eviction) or a rolled-back store drops them: they are
// read again from the table, never trusted past a change they did not see.
import { STORAGE_LIMITS, TALLY_LIMITS } from "../../shared/limits";
import { rowBytes } from "../../shared/storage";
import { utf8ByteLength } from "../../shared/encoding";
import { storedEnvelope } from "../../shared/tally/messages";
import { QUEUE_BOUNDS, planStore, type QueuedRow } from "../../server/tally/queue-bounds";
import type { LazySchema } from "../base/schema";
import type { Deferred } from "../base/deferred";
import { StorageLease } from "../relay/storage-lease";
import { CONTACT_ROW_BYTES } from "./tally-contacts";

const DAY_MS = 86_400_000;

/** A stored envelope as the bounds see it, with its id (its key is sender and id). */
type Evicted = QueuedRow & { id: string };

/** The queue's count and bytes, and the last seq given (0 with none). */
interface Sums {
  n: number;
  total: number;
  lastSeq: number;
}

export class TallyQueue {
  private readonly sql: SqlStorage;
  /** This user's share of the relay-wide total of stored envelopes (storage.tally_bytes). */
  readonly lease: StorageLease;
  /** The queue's sums as of the last change this instance made (undefined: read them from the table). */
  private kept: Sums | undefined;

  constructor(
    ctx: DurableObjectState,
    deferred: Deferred,
    env: ConstructorParameters<typeof StorageLease>[2],
    private readonly schema: LazySchema,
    /** Whether a sender is the recipient's contact (tally-contacts.ts wroteTo): never evicted for another's envelope. */
    private readonly isContact: (fromHex: string) => boolean,
  ) {
    this.sql = ctx.storage.sql;
    this.lease = new StorageLease(ctx, deferred, env, "tally", schema, () => this.held());
  }

  /**
   * What the user holds against the relay-wide Tally total: every row of its queue and of its
   * contacts, each charged storage.row_overhead_bytes plus its bytes (docs/hostile.md, "Relay-wide
   * totals"). Introductions are not charged: they live only while their device is online.
   */
  held(): number {
    if (!this.schema.exists) return 0;
    return this.sql
      .exec<{ b: number }>(
        "SELECT (SELECT TOTAL(bytes) + ? * COUNT(*) FROM queue) + (SELECT ? * COUNT(*) FROM contacts) AS b",
        STORAGE_LIMITS.row_overhead_bytes,
        CONTACT_ROW_BYTES,
      )
      .one().b;
  }

  /** What the contacts' rows hold against the total (a part of held()). */
  private contactsHeld(): number {
    return this.sql.exec<{ b: number }>("SELECT ? * COUNT(*) AS b FROM contacts", CONTACT_ROW_BYTES).one().b;
  }

  /** Bytes of the stored envelopes (0 for a user that never stored one: no schema is made). */
  bytes(): number {
    return this.sums().total;
  }

  /** How many envelopes are stored. */
  count(): number {
    return this.sums().n;
  }

  /** The queue's count, bytes and last seq: kept since the last read of the table, or read now. */
  private sums(): Sums {
    if (this.kept) return this.kept;
    if (!this.schema.exists) return { n: 0, total: 0, lastSeq: 0 };
    this.kept = this.sql
      .exec<{ n: number; total: number; lastSeq: number }>(
        "SELECT COUNT(*) AS n, TOTAL(bytes) AS total, COALESCE(MAX(seq), 0) AS lastSeq FROM queue",
      )
      .one();
    return this.kept;
  }

  /** Rows went (or a write was rolled back): the sums are read from the table when next needed. */
  private changed(): void {
    this.kept = undefined;
  }

  /** The stored envelopes, oldest first, in their stored form. */
  pending(): Array<{ seq: number; body: string }> {
    if (!this.schema.exists) return [];
    return this.sql.exec<{ seq: number; body: string }>("SELECT seq, body FROM queue ORDER BY seq").toArray();
  }

  /**
   * Stores an envelope (idempotent by (from, id)) within the queue's bounds (server/tally/queue-bounds.ts:
   * a sender's own oldest make room for its new one; a full queue makes room for a contact by
   * evicting strangers' oldest, and refuses a stranger). Answers the stored form and when it
   * expires (null when it was stored before), or null when it was not kept (refused by the
   * bounds: nothing changed), or "storage_full" when the relay-wide total has no room for it
   * (nothing kept; the lease, storage-lease.ts, charges what the queue then holds in the same
   * transaction as the write).
   */
  async store(
    raw: string,
    fromHex: string,
    id: string,
    now: number,
  ): Promise<{ body: string; expires: number | null } | null | "storage_full"> {
    const body = storedEnvelope(raw, new Date(now));
    const bytes = utf8ByteLength(body);
    if (bytes > TALLY_LIMITS.queue_max_bytes) return null;
    const r = await this.lease.store<{ body: string; expires: number | null } | null>(
      rowBytes(bytes),
      () => {
        const existing = this.sql.exec<{ body: string }>("SELECT body FROM queue WHERE from_hex = ? AND id = ?", fromHex, id).toArray()[0];
        if (existing) return { value: { body: existing.body, expires: null } };
        const room = this.roomFor(fromHex, bytes);
        if (room === null) return { value: null }; // refused: nothing written
        for (const e of room.evict) this.sql.exec("DELETE FROM queue WHERE from_hex = ? AND id = ?", e.from, e.id);
        const expires = now + TALLY_LIMITS.queue_ttl_days * DAY_MS;
        const seq = room.before.lastSeq + 1;
        this.sql.exec(
          "INSERT INTO queue (from_hex, id, seq, bytes, expires_at, body) VALUES (?, ?, ?, ?, ?, ?)",
          fromHex,
          id,
          seq,
          bytes,
          expires,
          body,
        );
        // What the user then holds is what its lease of the relay-wide total must cover: the queue's
        // sums before, less the evicted rows, and this row (no scan of the queue).
        const evicted = room.evict.reduce((sum, e) => sum + e.bytes, 0);
        const after = { n: room.before.n - room.evict.length + 1, total: room.before.total - evicted + bytes, lastSeq: seq };
        this.kept = after; // dropped again if the lease rolls this write back
        return { value: { body, expires }, held: after.total + STORAGE_LIMITS.row_overhead_bytes * after.n + this.contactsHeld() };
      },
      () => this.changed(),
    );
    return r.stored ? r.value : "storage_full";
  }

  /**
   * What a new envelope of `bytes` from `fromHex` evicts (its rows), or null when it is refused.
   * Within every bound (the usual case) the queue's sums and one read of the sender's rows (a
   * range of the key) decide; only a sender at its share or a full queue reads the rows for the
   * bounds' plan.
   */
  private roomFor(fromHex: string, bytes: number): { evict: Evicted[]; before: Sums } | null {
    const all = this.sums();
    const mine = this.sql
      .exec<{ n: number; total: number }>("SELECT COUNT(*) AS n, TOTAL(bytes) AS total FROM queue WHERE from_hex = ?", fromHex)
      .one();
    // A stranger's envelope within the strangers' share of the queue for sure: the whole queue is within it.
    const contact = this.isContact(fromHex);
    const withinShare = contact || (all.n + 1 <= QUEUE_BOUNDS.maxStrangerEnvelopes && all.total + bytes <= QUEUE_BOUNDS.maxStrangerBytes);
    if (
      withinShare &&
      all.n + 1 <= QUEUE_BOUNDS.maxEnvelopes &&
      all.total + bytes <= QUEUE_BOUNDS.maxBytes &&
      mine.n + 1 <= QUEUE_BOUNDS.maxPerSender &&
      mine.total + bytes <= QUEUE_BOUNDS.maxBytesPerSender
    )
      return { evict: [], before: all };
    const full = !withinShare || all.n + 1 > QUEUE_BOUNDS.maxEnvelopes || all.total + bytes > QUEUE_BOUNDS.maxBytes;
    // Room in the queue: only the sender's own share is over, and only its own rows matter.
    const rows = this.sql
      .exec<Evicted & Record<string, SqlStorageValue>>(
        `SELECT seq, from_hex AS "from", id, bytes FROM queue ${full ? "" : "WHERE from_hex = ?"} ORDER BY seq`,
        ...(full ? [] : [fromHex]),
      )
      .toArray();
    const plan = planStore(rows, { from: fromHex, bytes }, this.isContact);
    if (!plan.keep) return null;
    const bySeq = new Map(rows.map((r) => [r.seq, r]));
    return { evict: plan.evict.map((seq) => bySeq.get(seq)!), before: all };
  }

  /** An acking device took one envelope (the Tally protocol §6.3): it goes. */
  ack(fromHex: string, id: string): void {
    if (!this.schema.exists) return;
    this.lease.free(() => this.sql.exec("DELETE FROM queue WHERE from_hex = ? AND id = ?", fromHex, id));
    this.changed();
  }

  /** Drops every stored envelope (the operator banned this user); how many there were. */
  purgeAll(): number {
    if (!this.schema.exists) return 0;
    const n = this.count();
    if (n === 0) return 0;
    this.lease.free(() => this.sql.exec("DELETE FROM queue"));
    this.changed();
    return n;
  }

  /** Drops every envelope `fromHex` sent this user (the operator banned that sender); how many there were. */
  purgeFrom(fromHex: string): number {
    if (!this.schema.exists) return 0;
    const n = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM queue WHERE from_hex = ?", fromHex).one().n;
    if (n > 0) this.lease.free(() => this.sql.exec("DELETE FROM queue WHERE from_hex = ?", fromHex));
    this.changed();
    return n;
  }

  /** Pushed to a device that does not ack: every envelope up to `seq` goes (the Tally protocol §6.2). */
  removeThrough(seq: number): void {
    this.lease.free(() => this.sql.exec("DELETE FROM queue WHERE seq <= ?", seq));
    this.changed();
  }

  // Any statement that can write (a DELETE that matches nothing too) opens a write transaction,
  // and the socket's output then waits for its commit: deletes that are usually no-ops look first.

  /** Drops the envelopes expired at `now`. */
  purgeExpired(now: number): void {
    if (!this.schema.exists) return;
    if (this.sql.exec("SELECT 1 FROM queue WHERE expires_at <= ? LIMIT 1", now).toArray().length === 0) return;
    this.lease.free(() => this.sql.exec("DELETE FROM queue WHERE expires_at <= ?", now));
    this.changed();
  }

  /** When the next stored envelope expires (ms), or null. */
  nextExpiry(): number | null {
    if (!this.schema.exists) return null;
    return this.sql.exec<{ next: number | null }>("SELECT MIN(expires_at) AS next FROM queue").one().next;
  }
}
