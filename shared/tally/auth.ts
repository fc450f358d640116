// Register authentication for the Tally relay (NIP-42 style; docs/tally.md, the Tally protocol §13.9).
// The client answers the relay's challenge with a kind-22242 event tagged with the challenge and the
// relay URL, signed by the key of the user id it registers.
import { getEventHash, finalizeEvent, nostrEventSchema, signatureValid, type EventTemplate, type NostrEvent } from "../nostr/event";
import type { TallySigner } from "./signer";

export const AUTH_EVENT_KIND = 22242;
export const AUTH_MAX_SKEW_SECONDS = 600;

export type AuthCheckResult = { ok: true } | { ok: false; reason: AuthFailureReason };
export type AuthFailureReason =
  | "malformed"
  | "wrong_kind"
  | "bad_challenge"
  | "bad_relay"
  | "stale"
  | "wrong_pubkey"
  | "bad_id"
  | "bad_signature";

export function makeAuthEvent(opts: { secretKey: Uint8Array; challenge: string; relayUrl: string; createdAt?: number }): NostrEvent {
  return finalizeEvent(authTemplate(opts), opts.secretKey);
}

/** makeAuthEvent through a signer (the key need not be here). */
export function makeAuthEventWith(opts: {
  signer: TallySigner;
  challenge: string;
  relayUrl: string;
  createdAt?: number;
}): Promise<NostrEvent> {
  return opts.signer.signEvent(authTemplate(opts));
}

function authTemplate(opts: { challenge: string; relayUrl: string; createdAt?: number }): EventTemplate {
  return {
    kind: AUTH_EVENT_KIND,
    created_at: opts.createdAt ?? Math.floor(Date.now() / 1000),
    tags: [
      ["relay", opts.relayUrl],
      ["challenge", opts.challenge],
    ],
    content: "",
  };
}

function firstTagValue(tags: string[][], name: string): string | undefined {
  const tag = tags.find((t) => t[0] === name);
  return tag ? tag[1] : undefined;
}

/**
 * Checks, in this order: shape (malformed), kind, challenge tag, relay tag, clock skew, pubkey,
 * event id, signature. The first matching tag of each name is the one that counts. Never throws.
 */
export function checkAuthEvent(
  ev: unknown,
  expect: { challenge: string; pubkeyHex: string; relayUrlOk: (url: string) => boolean; nowSeconds: number },
): AuthCheckResult {
  try {
    const parsed = nostrEventSchema.safeParse(ev);
    if (!parsed.success) return { ok: false, reason: "malformed" };
    const e = parsed.data;
    if (e.kind !== AUTH_EVENT_KIND) return { ok: false, reason: "wrong_kind" };
    const challenge = firstTagValue(e.tags, "challenge");
    if (challenge === undefined || typeof expect.challenge !== "string" || challenge !== expect.challenge) {
      return { ok: false, reason: "bad_challenge" };
    }
    const relay = firstTagValue(e.tags, "relay");
    let relayOk = false;
    if (relay !== undefined) {
      try {
        relayOk = expect.relayUrlOk(relay) === true;
      } catch {
        relayOk = false;
      }
    }
    if (!relayOk) return { ok: false, reason: "bad_relay" };
    if (!Number.isFinite(expect.nowSeconds) || Math.abs(e.created_at - expect.nowSeconds) > AUTH_MAX_SKEW_SECONDS) {
      return { ok: false, reason: "stale" };
    }
    if (typeof expect.pubkeyHex !== "string" || e.pubkey !== expect.pubkeyHex.toLowerCase()) {
      return { ok: false, reason: "wrong_pubkey" };
    }
    if (getEventHash(e) !== e.id) return { ok: false, reason: "bad_id" };
    // Shape and id are checked above: the signature alone is left (not the schema and hash again).
    if (!signatureValid(e)) return { ok: false, reason: "bad_signature" };
    return { ok: true };
  } catch {
    return { ok: false, reason: "malformed" };
  }
}
