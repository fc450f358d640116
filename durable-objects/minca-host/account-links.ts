// An account's `links` table (the Minca protocol §4.2; docs/hosting.md, "Links"): its SQL and its
// row-size formula, in one place. What a link is charged (linkRowBytes, and topicRowBytes for the
// row the topic's mailbox keeps for each topic the account links) is what held() sums over the
// table, so a write's charge and the account's usage cannot drift apart
// (test/worker/minca-account-tables.test.ts holds them equal). Also the query a mailbox fetch is
// answered with (MincaAccount.linksFor) and its bounds in count and bytes.
import { MINCA_HOST_LIMITS } from "../../shared/limits";
import { rowBytes } from "../../shared/storage";
import { toArrayBuffer } from "../../shared/encoding";

export interface ServedLink {
  /** The link's blob; null when the caller asked without blobs (the mailbox holds it already). */
  blob: Uint8Array | null;
  until: number;
  /** When the link was written, in unix seconds. */
  at: number;
}

interface LinkRow extends Record<string, SqlStorageValue> {
  key: string;
  topic: string;
  blob: ArrayBuffer;
  until: number;
  at: number;
  written: number;
  author: string | null;
}

/** What one link row is charged: the per-row overhead plus its key, topic and blob. */
export function linkRowBytes(l: { key: string; topic: string; blobBytes: number }): number {
  return rowBytes(l.key.length + l.topic.length + l.blobBytes);
}

/** What the row a topic's mailbox keeps for a linking account is charged (once per distinct topic). */
export function topicRowBytes(account: string): number {
  return rowBytes(account.length);
}

export class AccountLinks {
  constructor(private readonly sql: SqlStorage) {}

  /** What the links hold against the account's bytes: each row (linkRowBytes) and each distinct topic's mailbox row (topicRowBytes). */
  held(account: string): number {
    const r = this.sql
      .exec<{ b: number; rows: number; topics: number }>(
        "SELECT TOTAL(length(key) + length(topic) + length(blob)) AS b, COUNT(*) AS rows, COUNT(DISTINCT topic) AS topics FROM links",
      )
      .one();
    return r.b + r.rows * rowBytes() + r.topics * topicRowBytes(account);
  }

  /** What writing `link` may add at most: its row, and its topic's mailbox row. */
  growth(link: { key: string; topic: string; blob: Uint8Array }, account: string): number {
    return linkRowBytes({ key: link.key, topic: link.topic, blobBytes: link.blob.length }) + topicRowBytes(account);
  }

  get(key: string): LinkRow | undefined {
    return this.sql.exec<LinkRow>("SELECT * FROM links WHERE key = ?", key).toArray()[0];
  }

  /** Writes a link, as the most recently written. */
  put(l: { key: string; topic: string; blob: Uint8Array; until: number; at: number }, author: string | null): void {
    this.sql.exec(
      `INSERT INTO links (key, topic, blob, until, at, written, author) VALUES (?, ?, ?, ?, ?, (SELECT COALESCE(MAX(written), 0) + 1 FROM links), ?)
       ON CONFLICT (key) DO UPDATE SET topic = excluded.topic, blob = excluded.blob, until = excluded.until, at = excluded.at, written = excluded.written, author = excluded.author`,
      l.key,
      l.topic,
      toArrayBuffer(l.blob),
      l.until,
      l.at,
      author,
    );
  }

  /** A link row as it was before a write its mailbox refused (none: the row goes). */
  restore(key: string, held: LinkRow | undefined): void {
    this.sql.exec("DELETE FROM links WHERE key = ?", key);
    if (held)
      this.sql.exec(
        "INSERT INTO links (key, topic, blob, until, at, written, author) VALUES (?, ?, ?, ?, ?, ?, ?)",
        held.key,
        held.topic,
        held.blob,
        held.until,
        held.at,
        held.written,
        held.author,
      );
  }

  /** Deletes the link `key`: its topic, or undefined when there was none. */
  delete(key: string): string | undefined {
    const held = this.sql.exec<{ topic: string }>("SELECT topic FROM links WHERE key = ?", key).toArray()[0];
    if (held) this.sql.exec("DELETE FROM links WHERE key = ?", key);
    return held?.topic;
  }

  /** Deletes the links whose `until` (unix seconds) is at or before `now`: the topics they named. */
  expire(now: number): Set<string> {
    const expired = this.sql.exec<{ topic: string }>("SELECT topic FROM links WHERE until <= ?", now).toArray();
    this.sql.exec("DELETE FROM links WHERE until <= ?", now);
    return new Set(expired.map((e) => e.topic));
  }

  /** Keeps the `max` most recently written links: the topics of those deleted. */
  evict(max: number): Set<string> {
    const over = this.sql
      .exec<{ key: string; topic: string }>("SELECT key, topic FROM links ORDER BY written DESC LIMIT -1 OFFSET ?", max)
      .toArray();
    for (const o of over) this.sql.exec("DELETE FROM links WHERE key = ?", o.key);
    return new Set(over.map((o) => o.topic));
  }

  /** How many links name `topic`. */
  countOf(topic: string): number {
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM links WHERE topic = ?", topic).one().n;
  }

  /** The topics the links name. */
  topics(): string[] {
    return this.sql
      .exec<{ topic: string }>("SELECT DISTINCT topic FROM links")
      .toArray()
      .map((r) => r.topic);
  }

  /** The earliest `until` (unix seconds), or null. */
  nextUntil(): number | null {
    return this.sql.exec<{ t: number | null }>("SELECT MIN(until) AS t FROM links").one().t;
  }

  /**
   * Among the account's `links_served_per_account` most recently written live links, those of
   * `topic`, each distinct blob once with its latest `until`, oldest first; at most
   * `link_bytes_served_per_account` bytes of blobs in all.
   */
  served(topic: string, withBlob: boolean): ServedLink[] {
    const rows = this.sql
      .exec<{ blob: ArrayBuffer | null; size: number; until: number; at: number }>(
        `SELECT ${withBlob ? "l.blob" : "NULL"} AS blob, length(l.blob) AS size, MAX(l.until) AS until, MAX(l.at) AS at FROM (
           SELECT * FROM links WHERE until > ? ORDER BY written DESC LIMIT ?) AS l
         WHERE l.topic = ? GROUP BY l.blob ORDER BY MAX(l.written) DESC`,
        Math.floor(Date.now() / 1000),
        MINCA_HOST_LIMITS.links_served_per_account,
        topic,
      )
      .toArray();
    // Bounded in bytes: one GET loads at most link_bytes_served_per_account from each linked account.
    const out: ServedLink[] = [];
    let bytes = 0;
    for (const r of rows) {
      if (bytes + r.size > MINCA_HOST_LIMITS.link_bytes_served_per_account) continue;
      bytes += r.size;
      out.push({ blob: r.blob === null ? null : new Uint8Array(r.blob), until: r.until, at: Math.floor(r.at / 1000) });
    }
    return out.reverse();
  }
}
