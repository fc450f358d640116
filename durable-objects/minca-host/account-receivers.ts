// An account's `receivers` table (docs/hosting.md, "Wakes"): the carry space's sys.receiver records
// as read, each marked gone while its push service says so. Its SQL in one place (the pushes to a
// receiver are account-pushes.ts'). A receiver row is charged nothing of its own
// (receiverRowBytes is 0): the version it was read from is stored in the carry space's log and
// charged there, and the rows are bounded in number (max_receivers_per_account).
// test/worker/minca-account-tables.test.ts holds what the account is charged equal to this.

/** What one receiver row is charged of its own: nothing (its carry-space version pays). */
export const receiverRowBytes = (): number => 0;

interface ReceiverRow {
  key: string;
  at: number;
  device: string;
  endpoint: string;
  p256dh: string;
  auth: string;
}

export class AccountReceivers {
  constructor(private readonly sql: SqlStorage) {}

  has(key: string): boolean {
    return this.sql.exec("SELECT 1 FROM receivers WHERE key = ?", key).toArray().length > 0;
  }

  /** The endpoints of the live (not gone) receivers other than `key`. */
  liveEndpointsBut(key: string): string[] {
    return this.sql
      .exec<{ endpoint: string }>("SELECT endpoint FROM receivers WHERE key != ? AND gone = 0", key)
      .toArray()
      .map((r) => r.endpoint);
  }

  /** Writes a receiver; written again, one its push service had said was gone is pushed to again. */
  put(r: ReceiverRow, author: string | null): void {
    this.sql.exec(
      `INSERT INTO receivers (key, at, device, endpoint, p256dh, auth, gone, author) VALUES (?, ?, ?, ?, ?, ?, 0, ?)
         ON CONFLICT (key) DO UPDATE SET at = excluded.at, device = excluded.device, endpoint = excluded.endpoint,
           p256dh = excluded.p256dh, auth = excluded.auth, gone = 0, author = excluded.author`,
      r.key,
      r.at,
      r.device,
      r.endpoint,
      r.p256dh,
      r.auth,
      author,
    );
  }

  /** Deletes the receiver `key` and the pushes still to send to it. */
  delete(key: string): void {
    if (this.sql.exec("DELETE FROM receivers WHERE key = ?", key).rowsWritten > 0)
      this.sql.exec("DELETE FROM pushes WHERE receiver = ?", key);
  }

  count(): number {
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM receivers").one().n;
  }
}
