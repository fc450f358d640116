// The relay information document (GET / with Accept: application/json), from one source.
import { LIMITS } from "./limits";
import type { StorageTotals } from "./storage";

export const SOFTWARE = "edge-relay";
export const VERSION = "0.1.0";

export interface InfoOptions {
  name: string;
  /** The relay's VAPID public key (base64url, 65 bytes), when it has one. */
  vapidPublicKey?: string | null;
  /** The Minca host's own identity (DESIGN 8.3), when it has one. */
  host?: { did: string; name: string } | null;
  /** Who may connect the host (MINCA_HOST_ADMISSION): open, allowlist, token, or closed when the setting is invalid. */
  hostAdmission?: string;
  /** The relay-wide storage totals in force (STORAGE_*_BYTES); limits.storage's defaults when absent. */
  storage?: StorageTotals;
}

export function relayInfo(opts: InfoOptions) {
  return {
    name: opts.name,
    software: SOFTWARE,
    version: VERSION,
    protocols: {
      tally: {
        endpoint: "/tally/v1/<npub>",
        seed: "Tally peer communication protocol (envelope versions 2 and 3)",
        auth: { event_kind: 22242, tags: ["challenge", "relay"], max_skew_seconds: LIMITS.tally.auth_max_skew_seconds },
        acks: true,
        queue_policy: "evict_oldest",
      },
      passnote: {
        endpoint: "/passnote/v2/<room>",
        seed: "Passnote wire protocol, version 2 (Passnote 1.1)",
        room_id: "base64url(Ed25519 public key from HKDF-SHA256(roster key, info 'passnote-relay-room-v1'))",
        auth: { challenge_bytes: 32, signature: "Ed25519 over 'passnote-relay-join-v1' || challenge" },
        peer_id_bytes: 8,
        broadcast_peer: "0000000000000000",
      },
      minca: {
        rooms: {
          endpoint: "/minca/v1/rooms/<room>",
          seed: "Minca 06 section 3 (connecting by code): code-channel rooms",
          room: "^b[a-z2-7]{52}$",
          join: { signature: "ES256", statement: "minca/relay-join/v1 || room || challenge", did: "did:key (P-256)" },
          limits: "minca_rooms",
        },
        mailbox: {
          endpoint: "/minca/v1/mailbox/<topic>",
          receivers: "/minca/v1/mailbox/<topic>/receivers",
          item: "/minca/v1/mailbox/<topic>/items/<seq>",
          seed: "Minca 002 §4.2 (mailbox fetch), §4.4 (wakes by Web Push)",
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
          seed: "Minca 002 §4.1-4.3 (carriers and hosts), DESIGN section 8",
          limits: "minca_host",
        },
      },
    },
    // The relay-wide totals as set (limits.storage holds their defaults until then).
    limits: opts.storage
      ? { ...LIMITS, storage: { ...LIMITS.storage, tally_bytes: opts.storage.tally, mailbox_bytes: opts.storage.mailbox, host_bytes: opts.storage.host } }
      : LIMITS,
  };
}
