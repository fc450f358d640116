// A carried space's log in its object's SQLite: each version stored exactly as it arrived with
// its seq, pages of it in the mailbox's page shape, and the carry space's record history a
// revoke's cutoff is judged against. Storage only: what counts is decided in shared/minca.
import { MINCA_HOST_LIMITS } from "../../shared/limits";
import type { LogPage } from "../../server/minca/host-wire";

interface LogRow extends Record<string, SqlStorageValue> {
  seq: number;
  bytes: number;
  version: string;
}

export class SpaceLog {
  constructor(private readonly sql: SqlStorage) {}

  /** The seq of a version the log holds. */
  seqOf(id: string): number | undefined {
    return this.sql.exec<{ seq: number }>("SELECT seq FROM log WHERE id = ?", id).toArray()[0]?.seq;
  }

  /** The seqs of those of `ids` the log holds, in one statement (a batch's dedup). */
  seqsOf(ids: readonly string[]): Map<string, number> {
    const held = new Map<string, number>();
    if (ids.length === 0) return held;
    const rows = this.sql.exec<{ id: string; seq: number }>(
      "SELECT id, seq FROM log WHERE id IN (SELECT value FROM json_each(?))",
      JSON.stringify(ids),
    );
    for (const r of rows) held.set(r.id, r.seq);
    return held;
  }

  /** Appends a version (in the caller's transaction): its seq, and whether this call added it (a request alongside may have). */
  insert(id: string, bytes: number, raw: string): { seq: number; added: boolean } {
    const seq = this.sql
      .exec<{ seq: number }>(
        "INSERT INTO log (id, bytes, version) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING seq",
        id,
        bytes,
        raw,
      )
      .toArray()[0]?.seq;
    return seq === undefined ? { seq: this.seqOf(id)!, added: false } : { seq, added: true };
  }

  /** Versions and bytes held. */
  usage(): { versions: number; bytes: number } {
    return this.sql
      .exec<{ versions: number; bytes: number }>("SELECT COUNT(*) AS versions, COALESCE(SUM(bytes), 0) AS bytes FROM log")
      .one();
  }

  /**
   * A page of the log as the text of a LogPage: each version spliced in exactly as it arrived (it
   * was checked as JSON then), not parsed here and serialised again by the Worker. `count` is how
   * many versions it holds.
   */
  page(after: number, limit: number): { text: string; count: number } {
    const rows = this.sql
      .exec<LogRow>("SELECT seq, bytes, version FROM log WHERE seq > ? ORDER BY seq LIMIT ?", after, limit + 1)
      .toArray();
    let items = "";
    let count = 0;
    let next = after;
    let bytes = 0;
    for (const r of rows) {
      if (count >= limit) break;
      if (count > 0 && bytes + r.bytes > MINCA_HOST_LIMITS.page_max_bytes) break;
      bytes += r.bytes;
      items += `${count === 0 ? "" : ","}{"seq":${r.seq},"version":${r.version}}`;
      next = r.seq;
      count++;
    }
    const oldest = this.sql.exec<{ s: number | null }>("SELECT MIN(seq) AS s FROM log").one().s;
    const page: Record<keyof LogPage, string> = {
      items: `[${items}]`,
      next: String(next),
      more: String(rows.length > count),
      oldest_seq: oldest === null ? "null" : String(oldest),
    };
    return { text: `{"items":${page.items},"next":${page.next},"more":${page.more},"oldest_seq":${page.oldest_seq}}`, count };
  }

  /**
   * The records the key `of` wrote after `cutoff`: for each (collection, key) such a version
   * wrote, the latest version of it (by `at`, then version id) that still counts — signed by no
   * key in `revoked` after that key's cutoff — or null when there is none.
   */
  history(
    of: string,
    cutoff: number,
    revoked: Array<{ did: string; cutoff: number | null }>,
  ): Array<{ collection: string; key: string; version: string | null }> {
    const touched = this.sql
      .exec<{ c: string; k: string }>(
        `SELECT DISTINCT json_extract(version, '$.collection') AS c, json_extract(version, '$.key') AS k FROM log
          WHERE json_extract(version, '$.author') = ? AND json_extract(version, '$.at') > ?`,
        of,
        cutoff,
      )
      .toArray();
    return touched.map(({ c, k }) => {
      const row = this.sql
        .exec<{ version: string }>(
          `SELECT version FROM log
            WHERE json_extract(version, '$.collection') = ? AND json_extract(version, '$.key') = ?
              AND NOT EXISTS (
                SELECT 1 FROM json_each(?) AS r
                 WHERE json_extract(r.value, '$.did') = json_extract(log.version, '$.author')
                   AND json_extract(r.value, '$.cutoff') IS NOT NULL
                   AND json_extract(log.version, '$.at') > json_extract(r.value, '$.cutoff'))
            ORDER BY json_extract(version, '$.at') DESC, id DESC LIMIT 1`,
          c,
          k,
          JSON.stringify(revoked),
        )
        .toArray()[0];
      return { collection: c, key: k, version: row?.version ?? null };
    });
  }
}
