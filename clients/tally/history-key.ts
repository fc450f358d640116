// The key of a ledger entry in a store's time index (history.ts pages by it; store.ts writes it
// beside each entry). Apart from both so that neither imports the other.
import type { LedgerEntry } from "../../shared/tally/entry";

/** The index key of an entry: its time (originated_at, else when it entered the ledger) zero-padded, then author, recipient, id. */
export function historyKey(e: Pick<LedgerEntry, "originated_at" | "timestamp" | "from_user_id" | "to_user_id" | "id">): string {
  let t = Date.parse(e.originated_at);
  if (Number.isNaN(t)) t = Date.parse(e.timestamp);
  const time = String(Number.isNaN(t) ? 0 : Math.max(0, t)).padStart(15, "0");
  return [time, e.from_user_id, e.to_user_id, e.id].map(encodeURIComponent).join("/");
}
