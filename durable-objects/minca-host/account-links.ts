// The links an account serves to a mailbox fetch (the Minca protocol §4.2; MincaAccount.linksFor):
// the query over its `links` table and the bounds in count and bytes of what one GET loads.
import { MINCA_HOST_LIMITS } from "../../shared/limits";

export interface ServedLink {
  /** The link's blob; null when the caller asked without blobs (the mailbox holds it already). */
  blob: Uint8Array | null;
  until: number;
  /** When the link was written, in unix seconds. */
  at: number;
}

/**
 * Among the account's `links_served_per_account` most recently written live links, those of
 * `topic`, each distinct blob once with its latest `until`, oldest first; at most
 * `link_bytes_served_per_account` bytes of blobs in all.
 */
export function linksServed(sql: SqlStorage, topic: string, withBlob: boolean): ServedLink[] {
  const rows = sql
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
