// The queue of one Tally user (the Tally protocol section 6, docs/hostile.md and docs/tally.md): the envelopes stored
// for the user while no device takes them, idempotent by (sender, id), bounded per sender by count
// and by bytes and as a whole (the largest sharer loses its oldest first), expiring after
// queue_ttl_days, and charged against the user's lease of the relay-wide total (storage.tally_bytes)
// in the same transaction as each store. The `queue` table's only writer; TallyUser (tally-user.ts)
// holds the sockets and decides when to store, push and delete.
import { STORAGE_LIMITS, TALLY_LIMITS } from "../../shared/limits";
import { rowBytes } from "../../shared/storage";
import { utf8ByteLength } from "../../shared/encoding";
import { storedEnvelope } from "../../shared/tally/messages";
import type { LazySchema } from "../base/schema";
import { StorageLease } from "../relay/storage-lease";
import { CONTACT_ROW_BYTES } from "./tally-contacts";

const DAY_MS = 86_400_000;

export class TallyQueue {
  private readonly sql: SqlStorage;
  /** This user's share of the relay-wide total of stored envelopes (storage.tally_bytes). */
  readonly lease: StorageLease;

  constructor(
    private readonly ctx: DurableObjectState,
    env: ConstructorParameters<typeof StorageLease>[1],
    private readonly schema: LazySchema,
  ) {
    this.sql = ctx.storage.sql;
    this.lease = new StorageLease(ctx, env, "tally", schema, () => this.held());
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

  /** Bytes of the stored envelopes (0 for a user that never stored one: no schema is made). */
  bytes(): number {
    if (!this.schema.exists) return 0;
    return this.sql.exec<{ total: number }>("SELECT TOTAL(bytes) AS total FROM queue").one().total;
  }

  /** How many envelopes are stored. */
  count(): number {
    if (!this.schema.exists) return 0;
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM queue").one().n;
  }

  /** The stored envelopes, oldest first, in their stored form. */
  pending(): Array<{ seq: number; body: string }> {
    if (!this.schema.exists) return [];
    return this.sql.exec<{ seq: number; body: string }>("SELECT seq, body FROM queue ORDER BY seq").toArray();
  }

  /**
   * Stores an envelope (idempotent by (from, id)) and applies the bounds; answers the stored form
   * and when it expires (null when it was stored before), or null when it was not kept (larger
   * than the whole queue, or evicted at once as the largest sharer's oldest), or "storage_full"
   * when the relay-wide total has no room for it (nothing kept; the lease, storage-lease.ts,
   * charges what the queue then holds in the same transaction as the write).
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
    const r = await this.lease.store<{ body: string; expires: number | null } | null>(rowBytes(bytes), () => {
      const existing = this.sql.exec<{ body: string }>("SELECT body FROM queue WHERE from_hex = ? AND id = ?", fromHex, id).toArray()[0];
      if (existing) return { value: { body: existing.body, expires: null } };
      const expires = now + TALLY_LIMITS.queue_ttl_days * DAY_MS;
      this.sql.exec(
        "INSERT INTO queue (from_hex, id, body, bytes, queued_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
        fromHex,
        id,
        body,
        bytes,
        now,
        expires,
      );
      // The bounds. Each delete runs only once its bound is passed (below it, it deletes nothing),
      // so that a store within bounds costs two aggregate reads, not scans that write.
      // One sender's share, by count and by bytes: its own oldest go first.
      const mine = this.sql
        .exec<{ n: number; total: number }>("SELECT COUNT(*) AS n, TOTAL(bytes) AS total FROM queue WHERE from_hex = ?", fromHex)
        .one();
      if (mine.n > TALLY_LIMITS.queue_max_per_sender) {
        this.sql.exec(
          `DELETE FROM queue WHERE seq IN (SELECT seq FROM queue WHERE from_hex = ? ORDER BY seq DESC LIMIT -1 OFFSET ?)`,
          fromHex,
          TALLY_LIMITS.queue_max_per_sender,
        );
      }
      if (mine.total > TALLY_LIMITS.queue_max_bytes_per_sender) {
        this.sql.exec(
          `DELETE FROM queue WHERE seq IN (
             SELECT seq FROM (SELECT seq, SUM(bytes) OVER (ORDER BY seq DESC) AS newer FROM queue WHERE from_hex = ?) WHERE newer > ?)`,
          fromHex,
          TALLY_LIMITS.queue_max_bytes_per_sender,
        );
      }
      this.evictLargestSharers();
      // What the user then holds is what its lease of the relay-wide total must cover.
      const held = this.held();
      // Evicted at once (its sender was the largest sharer of a full queue): it was not stored.
      const kept = this.sql.exec("SELECT 1 FROM queue WHERE from_hex = ? AND id = ?", fromHex, id).toArray().length > 0;
      return { value: kept ? { body, expires } : null, held };
    });
    return r.stored ? r.value : "storage_full";
  }

  /** An acking device took one envelope (the Tally protocol §6.3): it goes. */
  ack(fromHex: string, id: string): void {
    if (!this.schema.exists) return;
    this.lease.free(() => this.sql.exec("DELETE FROM queue WHERE from_hex = ? AND id = ?", fromHex, id));
  }

  /** Drops every stored envelope (the operator banned this user); how many there were. */
  purgeAll(): number {
    if (!this.schema.exists) return 0;
    const n = this.count();
    if (n === 0) return 0;
    this.lease.free(() => this.sql.exec("DELETE FROM queue"));
    return n;
  }

  /** Pushed to a device that does not ack: every envelope up to `seq` goes (the Tally protocol §6.2). */
  removeThrough(seq: number): void {
    this.lease.free(() => this.sql.exec("DELETE FROM queue WHERE seq <= ?", seq));
  }

  // Any statement that can write (a DELETE that matches nothing too) opens a write transaction,
  // and the socket's output then waits for its commit: deletes that are usually no-ops look first.

  /** Drops the envelopes expired at `now`. */
  purgeExpired(now: number): void {
    if (!this.schema.exists) return;
    if (this.sql.exec("SELECT 1 FROM queue WHERE expires_at <= ? LIMIT 1", now).toArray().length === 0) return;
    this.lease.free(() => this.sql.exec("DELETE FROM queue WHERE expires_at <= ?", now));
  }

  /** When the next stored envelope expires (ms), or null. */
  nextExpiry(): number | null {
    if (!this.schema.exists) return null;
    return this.sql.exec<{ next: number | null }>("SELECT MIN(expires_at) AS next FROM queue").one().next;
  }

  /**
   * The whole queue, by count and by bytes: while it is over a bound, the largest sharer (the
   * sender holding the most envelopes, or bytes; on a tie, the one whose oldest is oldest) loses
   * its oldest envelopes, as many as the excess. No sender can evict what others stored while it
   * holds more than they do (docs/hostile.md). Answers the bytes the queue then holds.
   */
  private evictLargestSharers(): number {
    for (;;) {
      const all = this.sql.exec<{ n: number; total: number }>("SELECT COUNT(*) AS n, TOTAL(bytes) AS total FROM queue").one();
      const overCount = all.n - TALLY_LIMITS.queue_max_envelopes;
      const overBytes = all.total - TALLY_LIMITS.queue_max_bytes;
      if (overCount <= 0 && overBytes <= 0) return all.total;
      const byBytes = overBytes > 0;
      const top = this.sql
        .exec<{ from_hex: string }>(
          `SELECT from_hex FROM queue GROUP BY from_hex ORDER BY ${byBytes ? "TOTAL(bytes)" : "COUNT(*)"} DESC, MIN(seq) LIMIT 1`,
        )
        .one().from_hex;
      if (byBytes) {
        this.sql.exec(
          `DELETE FROM queue WHERE seq IN (
             SELECT seq FROM (SELECT seq, SUM(bytes) OVER (ORDER BY seq) - bytes AS older FROM queue WHERE from_hex = ?) WHERE older < ?)`,
          top,
          overBytes,
        );
      } else {
        this.sql.exec("DELETE FROM queue WHERE seq IN (SELECT seq FROM queue WHERE from_hex = ? ORDER BY seq LIMIT ?)", top, overCount);
      }
    }
  }
}
