// The keeper of keys the relay generates once and keeps when no Worker secret provides them, so
// that `wrangler dev` and self-hosting work with no set-up (the local default). One object,
// named RELAY_KEYS_NAME; it holds state only: the key material is made by shared/.
import { StoredObject } from "../base/stored-object";
import { WebPushSender, type FetchLike } from "../../shared/webpush/send";
import { MIGRATIONS } from "../../migrations/index";
import { base64urlEncode } from "../../shared/encoding";
import { generateVapidKeys, vapidKeysFromPrivate, vapidSubjectFor, type VapidKeys } from "../../shared/webpush/vapid";
import { generateHostKey, hostDid } from "../../shared/minca/host-identity";

export const RELAY_KEYS_NAME = "relay-keys";

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

// Only the settled value is shared between requests (a pending promise must not cross them).
let kept: VapidKeys | undefined;

/** The relay's VAPID keys: from the VAPID_PRIVATE_KEY secret, else the kept (generated) ones. */
export async function vapidKeys(env: Env): Promise<VapidKeys> {
  if (env.VAPID_PRIVATE_KEY) return vapidKeysFromPrivate(env.VAPID_PRIVATE_KEY);
  if (!kept) {
    const stub = env.RELAY_KEYS.get(env.RELAY_KEYS.idFromName(RELAY_KEYS_NAME));
    kept = vapidKeysFromPrivate(await stub.vapidPrivateKey());
  }
  return kept;
}

export function vapidSubject(env: Env): string {
  return vapidSubjectFor(env);
}

/** A Web Push sender signing with the relay's one VAPID key (every sender must use the same). */
export async function relayPushSender(env: Env, fetch: FetchLike): Promise<WebPushSender> {
  return new WebPushSender({ keys: await vapidKeys(env), subject: vapidSubject(env), fetch });
}

let keptHostDid: string | undefined;

/** The Minca host's did and name: its key from the MINCA_HOST_KEY secret, else the kept (generated) one. */
export async function hostIdentity(env: Env): Promise<{ did: string; name: string }> {
  const name = env.MINCA_HOST_NAME || env.RELAY_NAME || "edge-relay";
  if (env.MINCA_HOST_KEY) return { did: hostDid(env.MINCA_HOST_KEY), name };
  if (!keptHostDid) {
    const stub = env.RELAY_KEYS.get(env.RELAY_KEYS.idFromName(RELAY_KEYS_NAME));
    keptHostDid = hostDid(await stub.hostPrivateKey());
  }
  return { did: keptHostDid, name };
}
