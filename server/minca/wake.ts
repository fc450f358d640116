// Wakes (docs/hosting.md, the Minca protocol §4.4): whether a new version wakes an account's wake — from its
// outside alone: its space, collection and topic tags, and (with `others`) whether its note roots
// at the account — and the push a receiver gets: the version as held when the encrypted message
// stays under 3 KB, else { id, space, collection, key }; Topic from the version id.
import { sha256 } from "@noble/hashes/sha2.js";
import { base64urlEncode, utf8Encode } from "../../shared/encoding";
import { MINCA_WAKE_LIMITS } from "../../shared/limits";
import type { WakeBody } from "../../shared/minca/carry";
import type { Outside } from "../../shared/minca/version";
import type { RetryPolicy } from "../webpush/send";

/** What a host knows of an arrived version when it matches: its outside and its note's root. */
export interface Arrival extends Outside {
  root: string;
}

/** RFC 8291 aes128gcm overhead of one record: 86-byte header, 16-byte tag, 1 delimiter. */
const ENCRYPTION_OVERHEAD = 86 + 16 + 1;

export function wakeMatches(wake: WakeBody, a: Arrival, account: string): boolean {
  if (wake.spaces !== "all" && !wake.spaces.includes(a.space)) return false;
  if (wake.collection !== a.collection) return false;
  if (wake.topics && !wake.topics.every((t) => a.topics.includes(t))) return false;
  if (wake.others && a.root === account) return false;
  return true;
}

/** The push body: the version as held (its raw JSON) when the encrypted message stays under 3 KB, else its short form. */
export function wakePayload(raw: string, a: Outside): Uint8Array {
  const full = utf8Encode(raw);
  if (full.length + ENCRYPTION_OVERHEAD < MINCA_WAKE_LIMITS.push_max_bytes) return full;
  return utf8Encode(JSON.stringify({ id: a.id, space: a.space, collection: a.collection, key: a.key }));
}

/** RFC 8030 Topic: base64url of the first 24 bytes of SHA-256(UTF-8(version id)), so hosts sending one version replace each other's copy. */
export function wakeTopic(versionId: string): string {
  return base64urlEncode(sha256(utf8Encode(versionId)).subarray(0, 24));
}

/** How a wake's push is retried (docs/hosting.md): backoff from push_retry_base_seconds, Retry-After honoured within its bound. */
export const WAKE_RETRY: RetryPolicy = {
  baseSeconds: MINCA_WAKE_LIMITS.push_retry_base_seconds,
  maxSeconds: MINCA_WAKE_LIMITS.push_retry_max_seconds,
  retryAfterMaxSeconds: MINCA_WAKE_LIMITS.push_retry_after_max_seconds,
};
