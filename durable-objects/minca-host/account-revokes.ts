// An account's `revoked` table (docs/hosting.md, "Revokes", "The tombstone"): the keys it revoked,
// each with its cutoff, kept for good (across carry:closed too). Its SQL and its row-size formula
// in one place: what a revoke is charged (revokeRowBytes) is what held() sums over the table
// (test/worker/minca-account-tables.test.ts holds them equal).
import type { RevokedKey } from "../../server/minca/append-plan";
import { strictestCutoff } from "../../shared/minca/carry";
import { rowBytes } from "../../shared/storage";

/** What one revoked key's row is charged: the per-row overhead plus its did. */
export function revokeRowBytes(did: string): number {
  return rowBytes(did.length);
}

export class AccountRevokes {
  constructor(private readonly sql: SqlStorage) {}

  /** What the revoked keys hold against the account's bytes (revokeRowBytes of each). */
  held(): number {
    const r = this.sql.exec<{ b: number; rows: number }>("SELECT TOTAL(length(did)) AS b, COUNT(*) AS rows FROM revoked").one();
    return r.b + r.rows * rowBytes();
  }

  /** Keeps a revoke of `did`; a key revoked again keeps the stricter cutoff. The cutoff now in force (null: none). */
  revoke(did: string, cutoff: number | null): number | null {
    const held = this.sql.exec<{ cutoff: number | null }>("SELECT cutoff FROM revoked WHERE did = ?", did).toArray()[0];
    const now = held ? strictestCutoff(held.cutoff, cutoff) : cutoff;
    this.sql.exec(
      "INSERT INTO revoked (did, at, cutoff) VALUES (?, ?, ?) ON CONFLICT (did) DO UPDATE SET cutoff = excluded.cutoff",
      did,
      Date.now(),
      now,
    );
    return now;
  }

  /** The revoke of `did` and its cutoff, or null. */
  get(did: string): RevokedKey | null {
    const row = this.sql.exec<{ cutoff: number | null }>("SELECT cutoff FROM revoked WHERE did = ?", did).toArray()[0];
    return row ? { did, cutoff: row.cutoff } : null;
  }

  /** The revokes with a cutoff. */
  withCutoff(): RevokedKey[] {
    return this.sql.exec<{ did: string; cutoff: number | null }>("SELECT did, cutoff FROM revoked WHERE cutoff IS NOT NULL").toArray();
  }

  count(): number {
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM revoked").one().n;
  }
}
