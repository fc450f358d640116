// An account's `receivers` table (docs/hosting.md, "Wakes"): the carry space's sys.receiver records
// as read, each marked gone while its push service says so, taken by the receiver registry's rules
// (server/webpush/receivers.ts). Its SQL in one place (the pushes to a
// receiver are account-pushes.ts'). A receiver row is charged nothing of its own
// (receiverRowBytes is 0): the version it was read from is stored in the carry space's log and
// charged there, and the rows are bounded in number (max_receivers_per_account).
// test/worker/minca-account-tables.test.ts holds what the account is charged equal to this.
import { MINCA_WAKE_LIMITS, WEBPUSH_LIMITS } from "../../shared/limits";
import type { EndpointPolicy } from "../../server/webpush/endpoint";
import { admitReceiver, type HeldReceiver, type ReceiverRefusal, type RegistryRules } from "../../server/webpush/receivers";

/**
 * An account's rules: its receiver records are signed by the account's own keys (and keyed by their
 * endpoint), so a record written again with other keys replaces the receiver.
 */
const rules = (policy: EndpointPolicy | null): RegistryRules => ({
  maxReceivers: MINCA_WAKE_LIMITS.max_receivers_per_account,
  maxOrigins: WEBPUSH_LIMITS.max_push_origins_per_topic,
  holder: "an account",
  sameEndpoint: "replace",
  policy,
});

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

  /** Every receiver held, gone ones included (each is a row). */
  held(): HeldReceiver[] {
    return this.sql
      .exec<{ key: string; endpoint: string; p256dh: string; auth: string; gone: number }>(
        "SELECT key, endpoint, p256dh, auth, gone FROM receivers",
      )
      .toArray()
      .map((r) => ({ id: r.key, endpoint: r.endpoint, keys: { p256dh: r.p256dh, auth: r.auth }, live: r.gone === 0 }));
  }

  /**
   * Takes a receiver record by the registry's rules (`policy` null: one restored after a revoke,
   * admitted once already) and writes it, or answers the refusal and writes nothing.
   */
  add(r: ReceiverRow, policy: EndpointPolicy | null, author: string | null): { ok: true } | ReceiverRefusal {
    const verdict = admitReceiver(this.held(), { endpoint: r.endpoint, keys: { p256dh: r.p256dh, auth: r.auth } }, rules(policy));
    if (!verdict.ok) return verdict;
    this.put(r, author);
    return { ok: true };
  }

  /** Writes a receiver; written again, one its push service had said was gone is pushed to again. */
  private put(r: ReceiverRow, author: string | null): void {
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
