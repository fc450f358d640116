// The relay information document (GET / with Accept: application/json), from one source.
import { LIMITS } from "./limits";

export const SOFTWARE = "edge-relay";
export const VERSION = "0.1.0";

export interface InfoOptions {
  name: string;
  /** The relay's VAPID public key (base64url, 65 bytes), when it has one. */
  vapidPublicKey?: string | null;
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
      minca: {
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
      },
    },
    limits: LIMITS,
  };
}
