// An account's `passes` table (docs/hosting.md, "Carried spaces"): the spaces it carries, each
// with the `usage` row of what it was charged there. Its SQL in one place. A pass row is charged
// nothing of its own (passRowBytes is 0): what the account pays for a space is its usage row (the
// bytes of the versions it was charged, account-usage.ts), which goes with the pass.
// test/worker/minca-account-tables.test.ts holds what the account is charged equal to this.

/** What one pass row is charged of its own: nothing (its space's usage row is what is charged). */
export const passRowBytes = (): number => 0;

interface PassRow {
  space: string;
  key: string;
  at: number;
  visibility: string;
  readKey: string | null;
  own: boolean;
}

export class AccountPasses {
  constructor(private readonly sql: SqlStorage) {}

  has(space: string): boolean {
    return this.sql.exec("SELECT 1 FROM passes WHERE space = ?", space).toArray().length > 0;
  }

  /** The space the pass record `key` names, or undefined. */
  spaceOf(key: string): string | undefined {
    return this.sql.exec<{ space: string }>("SELECT space FROM passes WHERE key = ?", key).toArray()[0]?.space;
  }

  put(p: PassRow, author: string | null): void {
    this.sql.exec(
      `INSERT INTO passes (space, key, at, visibility, read_key, author, own) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (space) DO UPDATE SET at = excluded.at, read_key = excluded.read_key, author = excluded.author, own = excluded.own`,
      p.space,
      p.key,
      p.at,
      p.visibility,
      p.readKey,
      author,
      p.own ? 1 : 0,
    );
  }

  /** What the account was charged for `space` (none: zeros). */
  usageOf(space: string): { versions: number; bytes: number } {
    return (
      this.sql.exec<{ versions: number; bytes: number }>("SELECT versions, bytes FROM usage WHERE space = ?", space).toArray()[0] ?? {
        versions: 0,
        bytes: 0,
      }
    );
  }

  /** The pass of `space` goes, and with it what the account was charged there. */
  delete(space: string): void {
    this.sql.exec("DELETE FROM passes WHERE space = ?", space);
    this.sql.exec("DELETE FROM usage WHERE space = ?", space);
  }

  /** Each carried space with what the account was charged for it. */
  carried(): Array<{ space: string; versions: number; bytes: number }> {
    return this.sql
      .exec<{ space: string; versions: number | null; bytes: number | null }>(
        "SELECT passes.space AS space, usage.versions AS versions, usage.bytes AS bytes FROM passes LEFT JOIN usage ON usage.space = passes.space",
      )
      .toArray()
      .map((c) => ({ space: c.space, versions: c.versions ?? 0, bytes: c.bytes ?? 0 }));
  }

  count(): number {
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM passes").one().n;
  }
}
