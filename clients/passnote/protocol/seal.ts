// Without a device identity the passphrase key is the only membership, and every message travels
// under it (the Passnote protocol, "The layer stack"): transport message = nonce (24 random bytes) ‖
// XChaCha20-Poly1305(passphrase key, nonce, frame), no associated data (profile). Anything that
// fails to open is dropped silently by the caller.
//
// With device identities every transport message starts with a kind byte: 0x00 plain (the same
// sealing, under the roster key) or 0x01 ratcheted (session.ts).
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { concatBytes, randomBytes } from "../../../shared/encoding";

export const KIND_PLAIN = 0x00;
export const KIND_RATCHET = 0x01;

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

/** Identity mode: 0x00 ‖ nonce ‖ XChaCha20-Poly1305(roster key, nonce, frame). */
export function sealPlain(rosterKey: Uint8Array, frame: Uint8Array): Uint8Array {
  return concatBytes(Uint8Array.of(KIND_PLAIN), sealFrame(rosterKey, frame));
}

/** The frame of a plain (kind 0x00) message, or null. Never throws. */
export function openPlain(rosterKey: Uint8Array, sealed: Uint8Array): Uint8Array | null {
  return sealed.length > 0 && sealed[0] === KIND_PLAIN ? openFrame(rosterKey, sealed.subarray(1)) : null;
}
