// The relay-wide objects (one of each per relay) by name, and the keys the relay generates once
// and keeps (RelayKeys) when no Worker secret provides them. The Worker and the objects both reach
// these through here, so the Worker imports nothing from an object's file but its class.
import { WebPushSender, type FetchLike } from "./webpush/send";
import { vapidKeysFromPrivate, type VapidKeys } from "./webpush/vapid";
import type { Settings } from "./settings";
import { hostDid } from "./minca/host-identity";
import { objectOf } from "./objects";

const RELAY_KEYS_NAME = "relay-keys";
/** The one stats object's name. */
const RELAY_STATS_NAME = "relay";
/** The one ledger's name. */
export const RELAY_LEDGER_NAME = "relay";
/** The one policy object's name (bans, allowlist, blocked addresses: the admin API). */
const RELAY_POLICY_NAME = "relay";

/** The stats object of a relay. */
export function relayStats(env: Pick<Env, "RELAY_STATS">) {
  return objectOf(env, "RELAY_STATS", RELAY_STATS_NAME);
}

/** The ledger of a relay. */
export function relayLedger(env: Pick<Env, "RELAY_LEDGER">) {
  return objectOf(env, "RELAY_LEDGER", RELAY_LEDGER_NAME);
}

/** The policy object of a relay (the admin API's lists). */
export function relayPolicy(env: Pick<Env, "RELAY_POLICY">) {
  return objectOf(env, "RELAY_POLICY", RELAY_POLICY_NAME);
}

function relayKeys(env: Pick<Env, "RELAY_KEYS">) {
  return objectOf(env, "RELAY_KEYS", RELAY_KEYS_NAME);
}

/** What the keys are read from: the parsed settings (server/settings.ts), never the environment. */
type KeySettings = Pick<Settings, "vapidKeys" | "vapidSubject" | "hostDid" | "hostName">;

// Only the settled value is shared between requests (a pending promise must not cross them).
let kept: VapidKeys | undefined;

/** The relay's VAPID keys: from the VAPID_PRIVATE_KEY secret (parsed with the settings), else the kept (generated) ones. */
export async function vapidKeys(env: Pick<Env, "RELAY_KEYS">, settings: KeySettings): Promise<VapidKeys> {
  if (settings.vapidKeys) return settings.vapidKeys;
  kept ??= vapidKeysFromPrivate(await relayKeys(env).vapidPrivateKey());
  return kept;
}

/** A Web Push sender signing with the relay's one VAPID key (every sender must use the same). */
export async function relayPushSender(env: Pick<Env, "RELAY_KEYS">, settings: KeySettings, fetch: FetchLike): Promise<WebPushSender> {
  return new WebPushSender({ keys: await vapidKeys(env, settings), subject: settings.vapidSubject, fetch });
}

let keptHostDid: string | undefined;

/** The Minca host's did and name: its key from the MINCA_HOST_KEY secret (parsed with the settings), else the kept (generated) one. */
export async function hostIdentity(env: Pick<Env, "RELAY_KEYS">, settings: KeySettings): Promise<{ did: string; name: string }> {
  const name = settings.hostName;
  if (settings.hostDid) return { did: settings.hostDid, name };
  keptHostDid ??= hostDid(await relayKeys(env).hostPrivateKey());
  return { did: keptHostDid, name };
}
