// The receiver registry's contract (test/contracts/receiver-registry.ts), run by a mailbox topic's
// receivers (durable-objects/mailbox/mailbox-receivers.ts). (A hosted account's receivers run the
// same suite.)
import { env, runInDurableObject } from "cloudflare:test";
import { receiverRegistryContract } from "../contracts/receiver-registry";
import { MailboxReceivers } from "../../durable-objects/mailbox/mailbox-receivers";
import { MailboxWakes } from "../../durable-objects/mailbox/mailbox-wakes";
import { LazySchema } from "../../durable-objects/base/schema";
import { MIGRATIONS } from "../../migrations/index";
import { MAILBOX_LIMITS } from "../../shared/limits";

let n = 0;

receiverRegistryContract("a mailbox topic's receivers", (f) => {
  const stub = env.MINCA_MAILBOX.get(env.MINCA_MAILBOX.idFromName(`registry-contract-${Date.now()}-${++n}`));
  return runInDurableObject(stub, async (_inst, state) => {
    new LazySchema(state.storage, MIGRATIONS.MincaMailbox).ensure();
    const sql = state.storage.sql;
    const receivers = new MailboxReceivers(sql);
    const wakes = new MailboxWakes(state.storage, () => "contract-topic");
    await f({
      sameEndpoint: "refuse",
      goneKept: false,
      maxReceivers: MAILBOX_LIMITS.max_receivers,
      add(endpoint, keys, policy) {
        const r = receivers.add({ endpoint, keys }, policy);
        return r.ok ? { ok: true } : { ok: false, code: r.code, detail: r.detail };
      },
      gone(endpoint) {
        const id = sql.exec<{ id: string }>("SELECT id FROM receivers WHERE endpoint = ?", endpoint).one().id;
        wakes.gone({ receiverId: id, seq: 0, attempts: 0, target: { endpoint, keys: { p256dh: "", auth: "" } } });
      },
      held: () =>
        sql
          .exec<{ endpoint: string; p256dh: string; auth: string }>(
            "SELECT endpoint, p256dh, auth FROM receivers ORDER BY created_at, rowid",
          )
          .toArray()
          .map((r) => ({ endpoint: r.endpoint, keys: { p256dh: r.p256dh, auth: r.auth } })),
    });
  });
});
