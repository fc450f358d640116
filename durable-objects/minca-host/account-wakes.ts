// An account's `wakes` table (docs/hosting.md, "Wakes"): the carry space's sys.wake records as read.
// Its SQL in one place. A wake row is charged nothing of its own (wakeRowBytes is 0): the version
// it was read from is stored in the carry space's log and charged there (the `usage` row of the
// carry space), and the rows are bounded in number (max_wakes_per_account).
// test/worker/minca-account-tables.test.ts holds what the account is charged equal to this.

/** What one wake row is charged of its own: nothing (its carry-space version pays). */
export const wakeRowBytes = (): number => 0;

export class AccountWakes {
  constructor(private readonly sql: SqlStorage) {}

  has(key: string): boolean {
    return this.sql.exec("SELECT 1 FROM wakes WHERE key = ?", key).toArray().length > 0;
  }

  put(key: string, at: number, body: string, author: string | null): void {
    this.sql.exec(
      "INSERT INTO wakes (key, at, body, author) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET at = excluded.at, body = excluded.body, author = excluded.author",
      key,
      at,
      body,
      author,
    );
  }

  delete(key: string): void {
    this.sql.exec("DELETE FROM wakes WHERE key = ?", key);
  }

  count(): number {
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM wakes").one().n;
  }
}
