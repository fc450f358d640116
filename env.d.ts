// The Worker's settings that `wrangler types` cannot see in wrangler.toml: optional secrets and
// the marker the self-hosting config sets. The bindings and [vars] are generated into
// worker-configuration.d.ts (`npm run types` after changing wrangler.toml; typecheck checks it).
// Both declare the global `Env` (and `Cloudflare.Env`, which the Workers test pool reads), so no
// module imports a type for it.

interface RelaySettings {
  /** "workerd" when the relay runs self-hosted under `workerd serve` (set by the generated config). */
  RELAY_RUNTIME?: string;
  /** "true" when the self-hosted relay listens on loopback only (set by the generated config): the operator's pages are then open without ADMIN_TOKEN. */
  RELAY_LOOPBACK_ONLY?: string;
  /** VAPID private key (base64url, 32 bytes), a Worker secret in production; generated and kept when unset. */
  VAPID_PRIVATE_KEY?: string;
  /** VAPID `sub`: a mailto: or https: URL push services can reach the operator at. */
  VAPID_SUBJECT?: string;
  /** The Minca host's P-256 private key (base64url, 32 bytes), a Worker secret in production; generated and kept when unset. */
  MINCA_HOST_KEY?: string;
  /** The Minca host's name in the information document; RELAY_NAME when unset. */
  MINCA_HOST_NAME?: string;
  /** With MINCA_HOST_ADMISSION = token: the Bearer token a CarryGrant POST must carry (docs/hosting.md, "Admission"), a Worker secret. */
  MINCA_HOST_ADMISSION_TOKEN?: string;
  /** Bearer token for GET /status, /status.json and /metrics, a Worker secret; unset: open (the local default). */
  ADMIN_TOKEN?: string;
}

declare namespace Cloudflare {
  interface Env extends RelaySettings {}
}
interface Env extends RelaySettings {}
