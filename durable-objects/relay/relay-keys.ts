// The keeper of keys the relay generates once and keeps when no Worker secret provides them, so
// that `wrangler dev` and self-hosting work with no set-up (the local default). One object,
// named RELAY_KEYS_NAME; it holds state only: the key material is made by shared/.
import { StoredObject } from "../base/stored-object";
import { MIGRATIONS } from "../../migrations/index";
import { base64urlEncode } from "../../shared/encoding";
import { generateVapidKeys } from "../../server/webpush/vapid";
import { generateHostKey } from "../../server/minca/host-identity";

export { relayPushSender } from "../../server/relay-objects";

export class RelayKeys extends StoredObject<Env> {
  /** Its schema is made when the first key is generated (a key is kept on first use: that is the point). */
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, { migrations: MIGRATIONS.RelayKeys });
  }

  /** The kept VAPID private key (base64url), generated on first use. */
  vapidPrivateKey(): string {
    this.schema.ensure();
    const sql = this.ctx.storage.sql;
    const row = sql.exec<{ value: string }>("SELECT value FROM keys WHERE name = 'vapid'").toArray()[0];
    if (row) return row.value;
    const value = base64urlEncode(generateVapidKeys().privateKey);
    sql.exec("INSERT INTO keys (name, value, created_at) VALUES ('vapid', ?, ?)", value, Date.now());
    return value;
  }

  /** The kept Minca host private key (base64url), generated on first use. */
  hostPrivateKey(): string {
    this.schema.ensure();
    const sql = this.ctx.storage.sql;
    const row = sql.exec<{ value: string }>("SELECT value FROM keys WHERE name = 'minca-host'").toArray()[0];
    if (row) return row.value;
    const value = generateHostKey();
    sql.exec("INSERT INTO keys (name, value, created_at) VALUES ('minca-host', ?, ?)", value, Date.now());
    return value;
  }
}
