// What the Minca host's worker tests share (minca-host*.test.ts): the relay's address, stubs of
// the two objects, a count of an object's rows, and an account connected to the host.
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { HostConnection, newAccount } from "../../clients/minca/host";

export const RELAY = "http://relay.test";
export const fetchSelf = ((input: RequestInfo | URL, init?: RequestInit) => SELF.fetch(input as string, init)) as typeof fetch;
export const spaceStub = (id: string) => env.MINCA_SPACE.get(env.MINCA_SPACE.idFromName(id));
export const accountStub = (did: string) => env.MINCA_ACCOUNT.get(env.MINCA_ACCOUNT.idFromName(did));
export const rows = (stub: DurableObjectStub, tables: string[]) =>
  runInDurableObject(stub, (_i, state) => {
    const out: Record<string, number> = {};
    for (const t of tables) {
      // an object that never kept anything has no tables at all (docs/hostile.md: nothing is stored for free)
      const exists = state.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", t).toArray().length > 0;
      out[t] = exists ? state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${t}`).one().n : 0;
    }
    return out;
  });

export async function connected() {
  const acct = await newAccount();
  const host = new HostConnection(acct, RELAY, { fetch: fetchSelf });
  await host.connect();
  return { acct, host };
}
