// The receiver registry's contract (test/contracts/receiver-registry.ts), run by a hosted account's
// receivers (durable-objects/minca-host/account-receivers.ts), the table its sys.receiver records
// are kept in.
import { env, runInDurableObject } from "cloudflare:test";
import { receiverRegistryContract } from "../contracts/receiver-registry";
import { AccountPushes } from "../../durable-objects/minca-host/account-pushes";
import { AccountStore } from "../../durable-objects/minca-host/account-store";
import { LazySchema } from "../../durable-objects/base/schema";
import { MIGRATIONS } from "../../migrations/index";
import { MINCA_WAKE_LIMITS } from "../../shared/limits";
import { receiverKey } from "../../shared/minca/carry";

let n = 0;

receiverRegistryContract("a hosted account's receivers", (f) => {
  const did = `did:key:zRegistryContract${Date.now()}${++n}`;
  const stub = env.MINCA_ACCOUNT.get(env.MINCA_ACCOUNT.idFromName(did));
  return runInDurableObject(stub, async (_inst, state) => {
    const schema = new LazySchema(state.storage, MIGRATIONS.MincaAccount);
    schema.ensure();
    const sql = state.storage.sql;
    const store = new AccountStore(state, schema, () => did);
    const pushes = new AccountPushes(store, env, (url, init) => fetch(url, init));
    let at = 0;
    await f({
      sameEndpoint: "replace",
      goneKept: true,
      maxReceivers: MINCA_WAKE_LIMITS.max_receivers_per_account,
      add(endpoint, keys, policy) {
        const row = { key: receiverKey(endpoint), at: ++at, device: "phone", endpoint, p256dh: keys.p256dh, auth: keys.auth };
        const r = store.receivers.add(row, policy, null);
        return r.ok ? { ok: true } : { ok: false, code: r.code, detail: r.detail };
      },
      gone(endpoint) {
        pushes.gone({
          id: 0,
          receiver: receiverKey(endpoint),
          endpoint,
          payload: new ArrayBuffer(0),
          topic: "t",
          attempts: 0,
          target: { endpoint, keys: { p256dh: "", auth: "" } },
        });
      },
      held: () =>
        sql
          .exec<{ endpoint: string; p256dh: string; auth: string }>("SELECT endpoint, p256dh, auth FROM receivers ORDER BY at")
          .toArray()
          .map((r) => ({ endpoint: r.endpoint, keys: { p256dh: r.p256dh, auth: r.auth } })),
    });
  });
});
