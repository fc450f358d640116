// The push outbox's contract (test/contracts/push-outbox.ts), run by a hosted account's pushes
// (durable-objects/minca-host/account-pushes.ts), the store the account's wakes go out through.
import { env, runInDurableObject } from "cloudflare:test";
import { pushOutboxContract } from "../contracts/push-outbox";
import { AccountPushes, type AccountPush } from "../../durable-objects/minca-host/account-pushes";
import { AccountStore } from "../../durable-objects/minca-host/account-store";
import { LazySchema } from "../../durable-objects/base/schema";
import { MIGRATIONS } from "../../migrations/index";

let n = 0;

pushOutboxContract<AccountPush>("a hosted account's pushes", (f) => {
  const did = `did:key:zOutboxContract${Date.now()}${++n}`;
  const stub = env.MINCA_ACCOUNT.get(env.MINCA_ACCOUNT.idFromName(did));
  return runInDurableObject(stub, async (_inst, state) => {
    const schema = new LazySchema(state.storage, MIGRATIONS.MincaAccount);
    schema.ensure();
    const sql = state.storage.sql;
    const store = new AccountPushes(new AccountStore(state, schema, () => did), env, (url, init) => fetch(url, init));
    let r = 0;
    await f({
      store,
      queue(endpoint) {
        let key = sql.exec<{ key: string }>("SELECT key FROM receivers WHERE endpoint = ?", endpoint).toArray()[0]?.key;
        if (key === undefined) {
          key = `receiver:${++r}`;
          sql.exec(
            "INSERT INTO receivers (key, at, device, endpoint, p256dh, auth, gone) VALUES (?, 0, 'd', ?, 'k', 'a', 0)",
            key,
            endpoint,
          );
        }
        sql.exec("INSERT INTO pushes (receiver, endpoint, payload, topic, next_at) VALUES (?, ?, X'00', 't', 0)", key, endpoint);
      },
      pending: () =>
        sql
          .exec<{ endpoint: string; attempts: number; nextAt: number }>(
            "SELECT endpoint, attempts, next_at AS nextAt FROM pushes ORDER BY id",
          )
          .toArray()
          .map((p) => ({ ...p })),
      receiverLive: (endpoint) => sql.exec("SELECT 1 FROM receivers WHERE endpoint = ? AND gone = 0", endpoint).toArray().length > 0,
    });
  });
});
