// A browser PushSubscription as its toJSON() gives it: { endpoint, expirationTime?, keys: { p256dh, auth } }.
import { p256 } from "@noble/curves/nist.js";
import * as z from "zod";
import { base64urlDecode, utf8ByteLength } from "../encoding";
import { WEBPUSH_LIMITS } from "../limits";
import type { PushKeys } from "./encrypt";

/**
 * The shape of an endpoint: an http(s) URL without credentials. Whether the relay will send to it
 * is docs/mailbox.md's rule (checkPushEndpoint in ./endpoint), applied with the relay's settings.
 */
function endpointOk(s: string): boolean {
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return false;
  }
  if (u.username || u.password) return false;
  return u.protocol === "https:" || u.protocol === "http:";
}

/** base64url, tolerating the padding some browsers add. */
function b64urlBytes(len: number) {
  return z
    .string()
    .max(256)
    .refine((s) => {
      try {
        return base64urlDecode(s.replace(/=+$/, "")).length === len;
      } catch {
        return false;
      }
    }, `must be base64url of ${len} bytes`);
}

function isP256Point(s: string): boolean {
  try {
    const bytes = base64urlDecode(s.replace(/=+$/, ""));
    if (bytes[0] !== 4) return false;
    p256.Point.fromBytes(bytes).assertValidity();
    return true;
  } catch {
    return false;
  }
}

export const pushSubscriptionSchema = z.object({
  endpoint: z.string().max(WEBPUSH_LIMITS.max_endpoint_chars).refine(endpointOk, "endpoint must be an http(s) URL"),
  expirationTime: z.number().nullable().optional(),
  keys: z.object({
    p256dh: b64urlBytes(65).refine(isP256Point, "p256dh must be an uncompressed P-256 point"),
    auth: b64urlBytes(16),
  }),
});

export type PushSubscriptionJSON = z.infer<typeof pushSubscriptionSchema>;

/** The decoded keys of a subscription. */
export function subscriptionKeys(sub: { keys: { p256dh: string; auth: string } }): PushKeys {
  return {
    p256dh: base64urlDecode(sub.keys.p256dh.replace(/=+$/, "")),
    auth: base64urlDecode(sub.keys.auth.replace(/=+$/, "")),
  };
}

/** The bytes a receiver's row holds for a subscription (its endpoint and keys as stored): what a topic charges for it, before the row overhead. */
export function subscriptionBytes(sub: { endpoint: string; keys: { p256dh: string; auth: string } }): number {
  return utf8ByteLength(sub.endpoint) + utf8ByteLength(sub.keys.p256dh) + utf8ByteLength(sub.keys.auth);
}
