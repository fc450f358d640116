// The worker tests' hold on the relay's storage totals: set one kind's total just above what is
// held, and put the defaults back. Worker pool only (cloudflare:test).
import { env, runInDurableObject } from "cloudflare:test";
import { relayLedger } from "../../durable-objects/relay/relay-ledger";
import type { TestRelayLedger as RelayLedger } from "../worker/test-objects";
import { STORAGE_LIMITS } from "../../shared/limits";
import type { StorageKind } from "../../shared/storage";

/** The ledger's own stub (the runtime's, which runInDurableObject needs; server/objects.ts hands out a retrying wrapper). */
export const ledger = () => env.RELAY_LEDGER.get(relayLedger(env).id) as unknown as DurableObjectStub<RelayLedger>;

/**
 * Sets one kind's total to what is held now plus `room` bytes (the slack leased beyond that is
 * the ledger's to take back); the others to their defaults. Answers the held bytes.
 */
export async function roomFor(kind: StorageKind, room: number): Promise<number> {
  return runInDurableObject(ledger(), async (inst: RelayLedger, st) => {
    const sql = st.storage.sql;
    const made = sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'totals'").toArray().length > 0;
    const held = made ? (sql.exec<{ held: number }>("SELECT held FROM totals WHERE kind = ?", kind).toArray()[0]?.held ?? 0) : 0;
    inst.useTotals({
      tally: STORAGE_LIMITS.tally_bytes,
      mailbox: STORAGE_LIMITS.mailbox_bytes,
      host: STORAGE_LIMITS.host_bytes,
      [kind]: held + room,
    });
    return held;
  });
}

/** The totals back at their defaults. */
export const resetTotals = () =>
  runInDurableObject(ledger(), (inst: RelayLedger) => {
    inst.useTotals({ tally: STORAGE_LIMITS.tally_bytes, mailbox: STORAGE_LIMITS.mailbox_bytes, host: STORAGE_LIMITS.host_bytes });
  });
