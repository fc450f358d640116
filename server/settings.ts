// The relay's settings, read from the environment once (per environment object: the runtime hands
// the Worker the same one on every request) and checked as a whole. One bad value makes the relay
// refuse every request, /healthz included, with 500 `bad_setting` naming the setting and why
// (workers/app.ts): a relay that guessed a default for a value its operator mistyped would run with
// a limit, an address rule or an admin key nobody chose. The self-hosted launcher asks /healthz at
// start, so a bad value stops `npm start` with the same message.
//
// Settings are [vars] in wrangler.toml (overridden by the environment self-hosted) and optional
// secrets (env.d.ts). docs/operating.md lists them all.
import { admissionOf, type Admission } from "./minca/admission";
import { parsePublicUrl } from "./public-url";
import { STORAGE_KINDS, STORAGE_SETTINGS, parseBytesSetting, type StorageTotals } from "../shared/storage";
import { isNpub, npubDecode } from "../shared/tally/keys";
import { parseEndpointAllow, type AllowedOrigin } from "./webpush/endpoint";
import { vapidKeysFromPrivate, vapidSubjectFor, vapidSubjectSchema, type VapidKeys } from "./webpush/vapid";
import { isP256DidKey } from "../shared/minca/did-key";
import { hostDid } from "./minca/host-identity";
import { LOG_LEVELS, type LogLevel } from "./log";

export interface Settings {
  /** RELAY_NAME: `name` in the information document. */
  relayName: string;
  /** RELAY_RUNTIME = workerd: self-hosted (set by the generated workerd config). */
  selfHosted: boolean;
  /**
   * RELAY_LOOPBACK_ONLY = true: self-hosted and listening on loopback only (set by the generated
   * workerd config): the operator's pages are then open without ADMIN_TOKEN, and closed otherwise.
   */
  loopbackOnly: boolean;
  /** PUBLIC_URL: the URLs the relay is reached at behind a proxy; empty when unset. */
  publicUrls: URL[];
  /** PUSH_ENDPOINT_ALLOW: origins push endpoints may have besides the public rule. */
  pushEndpointAllow: AllowedOrigin[];
  /** TRUSTED_PROXY_HEADER, lower case; null when unset. */
  trustedProxyHeader: string | null;
  /** MINCA_HOST_ADMISSION (+ MINCA_HOST_ALLOWLIST, MINCA_HOST_ADMISSION_TOKEN). */
  admission: Admission;
  /** STORAGE_*_BYTES: the relay-wide totals in force. */
  storage: StorageTotals;
  /** LOG_LEVEL: the least severe level written (default info). */
  logLevel: LogLevel;
  /** ADMIN_TOKEN: the operator's bearer token; null when unset (status pages open on loopback only, admin API by key only). */
  adminToken: string | null;
  /** ADMIN_PUBKEYS: the Nostr keys (64 lowercase hex) that may call the admin API. */
  adminPubkeys: readonly string[];
  /** VAPID_PRIVATE_KEY, parsed; null when unset (the relay generates one and keeps it: RelayKeys). */
  vapidKeys: VapidKeys | null;
  /** VAPID `sub`: VAPID_SUBJECT, else the origin of PUBLIC_URL's first https: URL, else the local default. */
  vapidSubject: string;
  /** The did of MINCA_HOST_KEY; null when unset (the relay generates a key and keeps it: RelayKeys). */
  hostDid: string | null;
  /** The Minca host's name: MINCA_HOST_NAME, else RELAY_NAME, else "edge-relay". */
  hostName: string;
}

type SettingsRead = { ok: true; settings: Settings } | { ok: false; problems: string[] };

/** What the settings module reads: every setting as the runtime hands it (strings, or absent). */
type SettingsEnv = object;

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/;
const HEX64 = /^[0-9a-f]{64}$/;

const read = new WeakMap<object, SettingsRead>();

/** The settings of this environment, parsed once. */
export function settingsOf(env: SettingsEnv): SettingsRead {
  let r = read.get(env);
  if (!r) {
    r = parseSettings(env);
    read.set(env, r);
  }
  return r;
}

/** The problems as one message: `SETTING: why` for each, joined by "; ". */
export function problemsText(problems: readonly string[]): string {
  return problems.join("; ");
}

export function parseSettings(env: SettingsEnv): SettingsRead {
  const problems: string[] = [];
  const str = (name: string): string => {
    const v = (env as Record<string, unknown>)[name];
    return typeof v === "string" ? v.trim() : "";
  };
  const bad = (name: string, why: string) => problems.push(`${name}: ${why}`);

  const publicUrl = parsePublicUrl(str("PUBLIC_URL"));
  for (const b of publicUrl.bad) bad("PUBLIC_URL", `${JSON.stringify(b)} is not a URL`);
  for (const u of publicUrl.urls) {
    if (!["ws:", "wss:", "http:", "https:"].includes(u.protocol)) bad("PUBLIC_URL", `${u.href} is not a ws:, wss:, http: or https: URL`);
  }

  const allow = parseEndpointAllow(str("PUSH_ENDPOINT_ALLOW"));
  for (const b of allow.bad) bad("PUSH_ENDPOINT_ALLOW", `${JSON.stringify(b)} is not an http(s) origin (scheme://host[:port])`);

  const proxy = str("TRUSTED_PROXY_HEADER");
  if (proxy !== "" && !HEADER_NAME.test(proxy)) bad("TRUSTED_PROXY_HEADER", `${JSON.stringify(proxy)} is not a header name`);

  const admission = admissionOf({
    MINCA_HOST_ADMISSION: str("MINCA_HOST_ADMISSION"),
    MINCA_HOST_ALLOWLIST: str("MINCA_HOST_ALLOWLIST"),
    MINCA_HOST_ADMISSION_TOKEN: str("MINCA_HOST_ADMISSION_TOKEN"),
  });
  if (admission.mode === "closed") bad("MINCA_HOST_ADMISSION", admission.why);
  if (admission.mode === "allowlist") {
    for (const did of admission.dids)
      if (!isP256DidKey(did)) bad("MINCA_HOST_ALLOWLIST", `${JSON.stringify(did)} is not an account's did:key (P-256)`);
  }

  const storage = {} as StorageTotals;
  for (const kind of STORAGE_KINDS) {
    const { setting, fallback } = STORAGE_SETTINGS[kind];
    const parsed = parseBytesSetting(str(setting));
    if (parsed === null) bad(setting, `${JSON.stringify(str(setting))} is not a size (decimal bytes, or with KiB, MiB, GiB or TiB)`);
    storage[kind] = parsed ?? fallback;
  }

  const level = str("LOG_LEVEL").toLowerCase() || "info";
  if (!(LOG_LEVELS as readonly string[]).includes(level))
    bad("LOG_LEVEL", `${JSON.stringify(str("LOG_LEVEL"))} is not one of ${LOG_LEVELS.join(", ")}`);

  const adminPubkeys: string[] = [];
  for (const k of str("ADMIN_PUBKEYS")
    .split(/[\s,]+/)
    .filter(Boolean)) {
    if (HEX64.test(k.toLowerCase())) adminPubkeys.push(k.toLowerCase());
    else if (isNpub(k)) adminPubkeys.push(npubDecode(k));
    else bad("ADMIN_PUBKEYS", `${JSON.stringify(k)} is neither an npub nor 64 hex characters`);
  }

  const subject = str("VAPID_SUBJECT");
  if (subject !== "" && !vapidSubjectSchema.safeParse(subject).success) bad("VAPID_SUBJECT", "must be a mailto: or https: URL");

  // The key secrets: unset, the relay generates and keeps a key; set, it must be one, or the first
  // wake (or the information document) would fail long after the start.
  const secret = <T>(name: string, parse: (key: string) => T): T | null => {
    const key = str(name);
    if (key === "") return null;
    try {
      return parse(key);
    } catch {
      bad(name, "is not a P-256 private key (base64url of a 32-byte scalar)");
      return null;
    }
  };
  const vapidKeys = secret("VAPID_PRIVATE_KEY", vapidKeysFromPrivate);
  const hostKeyDid = secret("MINCA_HOST_KEY", hostDid);

  if (problems.length > 0) return { ok: false, problems };
  const relayName = str("RELAY_NAME") || "edge-relay";
  return {
    ok: true,
    settings: {
      relayName,
      selfHosted: str("RELAY_RUNTIME") === "workerd",
      loopbackOnly: str("RELAY_LOOPBACK_ONLY") === "true",
      publicUrls: publicUrl.urls,
      pushEndpointAllow: allow.allow,
      trustedProxyHeader: proxy === "" ? null : proxy.toLowerCase(),
      admission,
      storage,
      logLevel: level as LogLevel,
      adminToken: str("ADMIN_TOKEN") || null,
      adminPubkeys,
      vapidKeys,
      vapidSubject: vapidSubjectFor(subject, publicUrl.urls),
      hostDid: hostKeyDid,
      hostName: str("MINCA_HOST_NAME") || relayName,
    },
  };
}
