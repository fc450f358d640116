// Without a device identity the passphrase key is the only membership, and every message travels
// under it (seed 001, "The layer stack"): transport message = nonce (24 random bytes) ‖
// XChaCha20-Poly1305(passphrase key, nonce, frame), no associated data (profile). Anything that
// fails to open is dropped silently by the caller.
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { randomBytes } from "../encoding";

export const NONCE_BYTES = 24;
export const TAG_BYTES = 16;

export function sealFrame(key: Uint8Array, frame: Uint8Array): Uint8Array {
  const nonce = randomBytes(NONCE_BYTES);
  const ct = xchacha20poly1305(key, nonce).encrypt(frame);
  const out = new Uint8Array(NONCE_BYTES + ct.length);
  out.set(nonce, 0);
  out.set(ct, NONCE_BYTES);
  return out;
}

/** The frame, or null when the bytes do not open under the key. Never throws. */
export function openFrame(key: Uint8Array, sealed: Uint8Array): Uint8Array | null {
  if (sealed.length < NONCE_BYTES + TAG_BYTES) return null;
  try {
    return xchacha20poly1305(key, sealed.subarray(0, NONCE_BYTES)).decrypt(sealed.subarray(NONCE_BYTES));
  } catch {
    return null;
  }
}
