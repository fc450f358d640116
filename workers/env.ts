import type { TallyUser } from "../durable-objects/tally-user";
import type { PassnoteRoom } from "../durable-objects/passnote-room";
import type { MincaRoom } from "../durable-objects/minca-room";
import type { MincaMailbox } from "../durable-objects/minca-mailbox";
import type { RelayKeys } from "../durable-objects/relay-keys";
import type { MincaAccount } from "../durable-objects/minca-account";
import type { MincaSpace } from "../durable-objects/minca-space";
import type { RelayStats } from "../durable-objects/relay-stats";

/** The Worker's bindings and settings (wrangler.toml [vars], secrets). */
export interface Env {
  TALLY_USER: DurableObjectNamespace<TallyUser>;
  PASSNOTE_ROOM: DurableObjectNamespace<PassnoteRoom>;
  MINCA_ROOM: DurableObjectNamespace<MincaRoom>;
  /** Shown as `name` in the information document. */
  RELAY_NAME?: string;
  /** The relay's public URL (e.g. wss://relay.example), accepted in auth events' relay tags. */
  PUBLIC_URL?: string;
  /** "workerd" when the relay runs self-hosted under `workerd serve` (set by the generated config). */
  RELAY_RUNTIME?: string;
  /**
   * Origins push endpoints may have besides DESIGN section 7's rule (comma-separated; an origin
   * without a port allows every port of its host; http allowed): a private push service, the
   * tests' loopback one. Empty by default.
   */
  PUSH_ENDPOINT_ALLOW?: string;
  MINCA_MAILBOX: DurableObjectNamespace<MincaMailbox>;
  RELAY_KEYS: DurableObjectNamespace<RelayKeys>;
  /** VAPID private key (base64url, 32 bytes), a Worker secret in production; generated and kept when unset. */
  VAPID_PRIVATE_KEY?: string;
  /** VAPID `sub`: a mailto: or https: URL push services can reach the operator at. */
  VAPID_SUBJECT?: string;
  MINCA_ACCOUNT: DurableObjectNamespace<MincaAccount>;
  MINCA_SPACE: DurableObjectNamespace<MincaSpace>;
  /** The Minca host's P-256 private key (base64url, 32 bytes), a Worker secret in production; generated and kept when unset. */
  MINCA_HOST_KEY?: string;
  /** The Minca host's name in the information document; RELAY_NAME when unset. */
  MINCA_HOST_NAME?: string;
  /** The static assets (wrangler.toml [assets]: the demo page). */
  ASSETS?: Fetcher;
  /** The operator's counters (GET /status). */
  RELAY_STATS: DurableObjectNamespace<RelayStats>;
  /** Bearer token for GET /status and /status.json, a Worker secret; unset: open (the local default). */
  ADMIN_TOKEN?: string;
}
