// The relay information document (GET / with Accept: application/json), from one source: its
// schema (the OpenAPI document's RelayInfo, server/openapi.ts) and the function that builds it.
import * as z from "zod";
import { LIMITS } from "../shared/limits";
import type { StorageTotals } from "../shared/storage";

export const SOFTWARE = "edge-relay";
/** The release (semver; scripts/release.ts sets it with package.json's, docs/releasing.md). */
export const VERSION = "0.2.0";

// The commit the Worker was built from, written into the bundle at build time (scripts/build.ts
// passes `--define BUILD_COMMIT:"<id>"` to wrangler; no git at runtime, none on Cloudflare).
declare const BUILD_COMMIT: string | undefined;
/** The commit id the bundle was built from ("+dirty" with uncommitted changes), or "unknown" (a bundle built without it). */
export const COMMIT: string = typeof BUILD_COMMIT === "string" && BUILD_COMMIT !== "" ? BUILD_COMMIT : "unknown";
/** Where the relay publishes its HTTPS endpoints as OpenAPI 3.1 (server/openapi.ts). */
export const OPENAPI_PATH = "/openapi.json";

interface InfoOptions {
  name: string;
  /** The relay's VAPID public key (base64url, 65 bytes), when it has one. */
  vapidPublicKey?: string | null;
  /** The Minca host's own identity (docs/hosting.md), when it has one. */
  host?: { did: string; name: string } | null;
  /** Who may connect the host (MINCA_HOST_ADMISSION): open, allowlist, token, or closed when the setting is invalid. */
  hostAdmission?: string;
  /** The relay-wide storage totals in force (STORAGE_*_BYTES); limits.storage's defaults when absent. */
  storage?: StorageTotals;
}

/** Every limit group, each limit by name (every bound is a number). */
const limitsSchema = z.object(
  Object.fromEntries(
    Object.entries(LIMITS).map(([group, limits]) => [
      group,
      z.object(Object.fromEntries(Object.keys(limits).map((name) => [name, z.number()]))),
    ]),
  ),
);

const did = z.string().describe("did:key");

export const relayInfoSchema = z.object({
  name: z.string(),
  software: z.literal(SOFTWARE),
  version: z.string(),
  commit: z.string().describe("the commit the relay was built from, or unknown"),
  openapi: z.literal(OPENAPI_PATH).describe("the HTTPS endpoints as an OpenAPI 3.1 document"),
  protocols: z.object({
    tally: z.object({
      endpoint: z.string(),
      seed: z.string(),
      auth: z.object({ event_kind: z.number().int(), tags: z.array(z.string()), max_skew_seconds: z.number() }),
      acks: z.boolean(),
      queue_policy: z.string(),
      keepalive: z.string(),
    }),
    passnote: z.object({
      endpoint: z.string(),
      seed: z.string(),
      room_id: z.string(),
      auth: z.object({ challenge_bytes: z.number().int(), signature: z.string() }),
      peer_id_bytes: z.number().int(),
      broadcast_peer: z.string(),
    }),
    minca: z.object({
      rooms: z.object({
        endpoint: z.string(),
        seed: z.string(),
        room: z.string(),
        join: z.object({ signature: z.string(), statement: z.string(), did: z.string() }),
        limits: z.string(),
      }),
      mailbox: z.object({ endpoint: z.string(), receivers: z.string(), item: z.string(), seed: z.string(), cors: z.string() }),
      push: z.object({
        vapid_public_key: z.string().nullable().describe("base64url of the 65-byte P-256 key; null when the relay has none"),
        content_encoding: z.literal("aes128gcm"),
      }),
      host: z.object({
        did: did.nullable(),
        name: z.string().nullable(),
        accounts: z.string(),
        admission: z.string().describe("open, allowlist, token, or closed when the setting is invalid"),
        versions: z.string(),
        seed: z.string(),
        limits: z.string(),
      }),
    }),
  }),
  limits: limitsSchema,
});
/** The document as built; its limits are LIMITS itself (the schema knows their names and types). */
type RelayInfo = Omit<z.infer<typeof relayInfoSchema>, "limits"> & { limits: typeof LIMITS };

export function relayInfo(opts: InfoOptions): RelayInfo {
  return {
    name: opts.name,
    software: SOFTWARE,
    version: VERSION,
    commit: COMMIT,
    openapi: OPENAPI_PATH,
    protocols: {
      tally: {
        endpoint: "/tally/v1/<npub>",
        seed: "the Tally peer communication protocol, envelope versions 2 and 3 (docs/tally.md)",
        auth: { event_kind: 22242, tags: ["challenge", "relay"], max_skew_seconds: LIMITS.tally.auth_max_skew_seconds },
        acks: true,
        queue_policy: `strangers_share_then_refuse: strangers' envelopes together hold at most limits.tally.queue_strangers_share of a queue (queue_max_envelopes, queue_max_bytes), a stranger's past it evicting strangers' oldest; a contact's (a user the recipient has sent an envelope to) to a full queue evicts strangers' oldest first, else is refused; a stranger's to a queue full of contacts' envelopes is answered queued not_stored; a sender over its own share (queue_max_per_sender, queue_max_bytes_per_sender) evicts its own oldest`,
        keepalive: `a registered socket that sends nothing (no message, no ping) for ${LIMITS.tally.idle_timeout_seconds} s (limits.tally.idle_timeout_seconds) counts as offline (envelopes are stored for it) and is closed with 4408 when next a delivery or presence answer reads it; send {"type":"ping"} more often than that`,
      },
      passnote: {
        endpoint: "/passnote/v2/<room>",
        seed: "the Passnote wire protocol, version 2 (docs/passnote.md)",
        room_id: "base64url(Ed25519 public key from HKDF-SHA256(roster key, info 'passnote-relay-room-v1'))",
        auth: { challenge_bytes: 32, signature: "Ed25519 over 'passnote-relay-join-v1' || challenge" },
        peer_id_bytes: 8,
        broadcast_peer: "0000000000000000",
      },
      minca: {
        rooms: {
          endpoint: "/minca/v1/rooms/<room>",
          seed: "the Minca protocol, connecting by code: code-channel rooms (docs/minca-rooms.md)",
          room: "^b[a-z2-7]{52}$",
          join: { signature: "ES256", statement: "minca/relay-join/v1 || room || challenge", did: "did:key (P-256)" },
          limits: "minca_rooms",
        },
        mailbox: {
          endpoint: "/minca/v1/mailbox/<topic>",
          receivers: "/minca/v1/mailbox/<topic>/receivers",
          item: "/minca/v1/mailbox/<topic>/items/<seq>",
          seed: "the Minca protocol: mailbox fetch and wakes by Web Push (docs/mailbox.md)",
          cors: "*",
        },
        push: {
          vapid_public_key: opts.vapidPublicKey ?? null,
          content_encoding: "aes128gcm",
        },
        host: {
          did: opts.host?.did ?? null,
          name: opts.host?.name ?? null,
          accounts: "/minca/v1/host/accounts",
          admission: opts.hostAdmission ?? "open",
          versions: "/minca/v1/spaces/<id>/versions",
          seed: "the Minca protocol: carriers and hosts (docs/hosting.md)",
          limits: "minca_host",
        },
      },
    },
    // The relay-wide totals as set (limits.storage holds their defaults until then).
    limits: opts.storage
      ? {
          ...LIMITS,
          storage: {
            ...LIMITS.storage,
            tally_bytes: opts.storage.tally,
            mailbox_bytes: opts.storage.mailbox,
            host_bytes: opts.storage.host,
          },
        }
      : LIMITS,
  };
}
