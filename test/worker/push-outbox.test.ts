// The push outbox's contract (test/contracts/push-outbox.ts), run by every store of pushes this
// suite owns: a mailbox's wakes. (A hosted account's store runs the same suite.)
import { env, runInDurableObject } from "cloudflare:test";
import { pushOutboxContract } from "../contracts/push-outbox";
import { MailboxWakes, type Wake } from "../../durable-objects/mailbox/mailbox-wakes";
import { LazySchema } from "../../durable-objects/base/schema";
import { MIGRATIONS } from "../../migrations/index";

let n = 0;

pushOutboxContract<Wake>("a mailbox's wakes", (f) => {
  const stub = env.MINCA_MAILBOX.get(env.MINCA_MAILBOX.idFromName(`outbox-contract-${Date.now()}-${++n}`));
  return runInDurableObject(stub, async (_inst, state) => {
    new LazySchema(state.storage, MIGRATIONS.MincaMailbox).ensure();
    const sql = state.storage.sql;
    const store = new MailboxWakes(state.storage, () => "contract-topic");
    let r = 0;
    await f({
      store,
      queue(endpoint) {
        let id = sql.exec<{ id: string }>("SELECT id FROM receivers WHERE endpoint = ?", endpoint).toArray()[0]?.id;
        if (id === undefined) {
          id = `r${++r}`;
          sql.exec("INSERT INTO receivers (id, endpoint, p256dh, auth, created_at) VALUES (?, ?, 'k', 'a', 0)", id, endpoint);
        }
        const seq = sql
          .exec<{ seq: number }>(
            "INSERT INTO items (at, until, bytes, blob) VALUES (0, ?, 1, X'00') RETURNING seq",
            Math.floor(Date.now() / 1000) + 3600,
          )
          .one().seq;
        sql.exec("INSERT INTO deliveries (receiver_id, seq, attempts, next_at) VALUES (?, ?, 0, 0)", id, seq);
      },
      pending: () =>
        sql
          .exec<{ endpoint: string; attempts: number; nextAt: number }>(
            "SELECT r.endpoint, d.attempts, d.next_at AS nextAt FROM deliveries d JOIN receivers r ON r.id = d.receiver_id ORDER BY d.seq",
          )
          .toArray()
          .map((p) => ({ ...p })),
      receiverLive: (endpoint) => sql.exec("SELECT 1 FROM receivers WHERE endpoint = ?", endpoint).toArray().length > 0,
    });
  });
});
