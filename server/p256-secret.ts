// A P-256 private key as the relay keeps it in a secret or setting: base64url of a 32-byte scalar
// (the VAPID key, the Minca host's key).
import { p256 } from "@noble/curves/nist.js";
import { base64urlDecode } from "../shared/encoding";

/** The 32-byte scalar of `b64url` (surrounding spaces ignored); throws `fail(message)` naming `what` otherwise. */
export function p256SecretFrom(b64url: string, what: string, fail: (message: string) => Error): Uint8Array {
  let key: Uint8Array;
  try {
    key = base64urlDecode(b64url.trim());
  } catch {
    throw fail(`${what} is not base64url`);
  }
  if (key.length !== 32 || !p256.utils.isValidSecretKey(key)) throw fail(`${what} must be a 32-byte P-256 scalar`);
  return key;
}
