// Test-only ways into a Tally user's object, through its production surface: one envelope handed
// over as another user's object hands it (deliverAll), and the count of stored envelopes read
// from its storage.
import { runInDurableObject } from "cloudflare:test";
import type { Delivery, TallyUser } from "../../durable-objects/tally/tally-user";

/** Hands one envelope to the recipient's object as the sender's object does; what it did with it. */
export async function deliver(stub: DurableObjectStub<TallyUser>, raw: string, fromHex: string, id: string): Promise<Delivery> {
  const [status] = await stub.deliverAll([[raw, fromHex, id]]);
  if (status === null || status === undefined) throw new Error(`delivery of ${id} failed`);
  return status as Delivery;
}

/** How many envelopes are stored for the user. */
export function queuedCount(stub: DurableObjectStub<TallyUser>): Promise<number> {
  return runInDurableObject(stub, (_inst, state) => {
    const sql = state.storage.sql;
    if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'queue'").toArray().length === 0) return 0;
    return sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM queue").one().n;
  });
}
