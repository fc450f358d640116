// Minca ids (docs/hosting.md): "b" + lowercase unpadded base32 of SHA-256 — spaces, versions and
// code-channel rooms all have this shape — and the record keys that name a thing by hash
// (`pass:`, `receiver:`, `carrier:`): hex of the first 20 bytes of SHA-256(UTF-8(s)).
import { sha256 } from "@noble/hashes/sha2.js";
import { base32nopad } from "@scure/base";
import { bytesToHex, utf8Encode } from "../encoding";

export const ID_PATTERN = /^b[a-z2-7]{52}$/;

/** "b" + base32(SHA-256(bytes)), lowercase, unpadded: 53 characters. */
export function mincaId(bytes: Uint8Array): string {
  return "b" + base32nopad.encode(sha256(bytes)).toLowerCase();
}

/**
 * The same id, hashed by WebCrypto's SHA-256 (native in workerd, Node and browsers, where the
 * synchronous one above runs in JavaScript): for ids computed per request, such as a host
 * checking each version's.
 */
export async function digestMincaId(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new Uint8Array(bytes));
  return "b" + base32nopad.encode(new Uint8Array(digest)).toLowerCase();
}

export function isMincaId(s: unknown): s is string {
  return typeof s === "string" && ID_PATTERN.test(s);
}

/** Hex of the first 20 bytes of SHA-256(UTF-8(s)): the hash part of a record key. */
export function keyHash(s: string): string {
  return bytesToHex(sha256(utf8Encode(s)).subarray(0, 20));
}
