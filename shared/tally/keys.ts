// Tally identities (the Tally protocol §2): an x-only secp256k1 public key (BIP-340), written as 64 lowercase
// hex for crypto calls and as a bech32 "npub" everywhere else.
//
// Decision: the canonical npub is the lowercase bech32 string. npubDecode (and so isNpub) accepts
// only that form, so two strings that name the same user always compare equal. The payload must be
// exactly 32 bytes; whether those bytes are a point on the curve is checked where the key is used.
import { schnorr } from "@noble/curves/secp256k1.js";
import { bech32 } from "@scure/base";
import { acceptedBy, bytesToHex, hexToBytes } from "../encoding";

const NPUB_PREFIX = "npub";
const HEX64 = /^[0-9a-fA-F]{64}$/;

export function npubEncode(hex: string): string {
  if (typeof hex !== "string" || !HEX64.test(hex)) throw new Error("npubEncode: expected 64 hex characters");
  return bech32.encode(NPUB_PREFIX, bech32.toWords(hexToBytes(hex)));
}

/**
 * npubs decoded lately (npub -> hex): the relay decodes the same few npubs on every message (the
 * schema's check, then the routing), and a bech32 decode costs more than the rest of a frame's
 * handling. Bounded: emptied when full. Only successful decodes are kept; failures always rerun.
 */
const decoded = new Map<string, string>();
const DECODED_MAX = 4096;

/** Returns the 64 lowercase hex public key; throws Error on anything but a canonical npub. */
export function npubDecode(npub: string): string {
  const hit = typeof npub === "string" ? decoded.get(npub) : undefined;
  if (hit !== undefined) return hit;
  const hex = decodeNpub(npub);
  if (decoded.size >= DECODED_MAX) decoded.clear();
  decoded.set(npub, hex);
  return hex;
}

function decodeNpub(npub: string): string {
  if (typeof npub !== "string") throw new Error("npubDecode: not a string");
  if (npub !== npub.toLowerCase()) throw new Error("npubDecode: npub must be lowercase");
  let prefix: string;
  let bytes: Uint8Array;
  try {
    const decoded = bech32.decode(npub as `${string}1${string}`, 90);
    prefix = decoded.prefix;
    bytes = bech32.fromWords(decoded.words);
  } catch {
    throw new Error("npubDecode: invalid bech32");
  }
  if (prefix !== NPUB_PREFIX) throw new Error("npubDecode: prefix is not npub");
  if (bytes.length !== 32) throw new Error("npubDecode: payload is not 32 bytes");
  return bytesToHex(bytes);
}

export const isNpub = acceptedBy(npubDecode);

export function generateSecretKey(): Uint8Array {
  return schnorr.utils.randomSecretKey();
}

/** x-only (BIP-340) public key of a secret key, 64 lowercase hex. */
export function getPublicKeyHex(secret: Uint8Array): string {
  return bytesToHex(schnorr.getPublicKey(secret));
}

/** Accepts an npub or 64 hex characters (any case); returns 64 lowercase hex. */
export function userIdToHex(id: string): string {
  if (typeof id === "string" && HEX64.test(id)) return id.toLowerCase();
  return npubDecode(id);
}
