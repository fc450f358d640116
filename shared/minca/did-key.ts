// did:key for P-256 public keys: "did:key:z" + base58btc(multicodec p256-pub (0x1200, varint
// 0x80 0x24) ‖ 33-byte compressed point). Every Minca key (throwaway room keys, a program's key,
// an account's key) is named this way.
import { p256 } from "@noble/curves/nist.js";
import { base58 } from "@scure/base";
import { MINCA_HOST_LIMITS } from "../limits";
import { RecentMap } from "../recent-map";
import { acceptedBy } from "../encoding";

export class DidKeyError extends Error {}

const P256_PREFIX = Uint8Array.of(0x80, 0x24);
const DID_KEY = "did:key:z";
/** The longest string a P-256 did:key can be (35 bytes in base58 is at most 48 characters). */
export const DID_KEY_MAX_CHARS = DID_KEY.length + 48;

/** The did:key of a P-256 public key given compressed (33 bytes) or uncompressed (65 bytes). */
export function p256DidKey(publicKey: Uint8Array): string {
  return didKeyOf(P256_PREFIX, pointOf(publicKey).toBytes(true));
}

/**
 * P-256 did:keys checked lately, with their point in both forms. Decoding one (base58, then the
 * square root that decompresses the point) costs more than the signature check it is for, and a
 * host sees the same few keys on every version. Only keys that decoded are kept; anything else
 * is decoded (and refused) every time.
 */
const decodedP256 = new RecentMap<string, { compressed: Uint8Array; uncompressed: Uint8Array }>(MINCA_HOST_LIMITS.decoded_keys_kept);

function decodeP256(did: string): { compressed: Uint8Array; uncompressed: Uint8Array } {
  const hit = typeof did === "string" ? decodedP256.get(did) : undefined;
  if (hit !== undefined) return hit;
  const compressed = keyFromDidKey(did, P256_PREFIX, 33, "a P-256 key");
  const decoded = { compressed, uncompressed: pointOf(compressed).toBytes(false) };
  decodedP256.set(did, decoded);
  return decoded;
}

/** The compressed point a P-256 did:key names; throws DidKeyError for anything else. */
export function p256FromDidKey(did: string): Uint8Array {
  return decodeP256(did).compressed.slice();
}

/** The key bytes after a did:key's multicodec prefix, when it is that prefix and length. */
function keyFromDidKey(did: string, prefix: Uint8Array, keyLength: number, what: string): Uint8Array {
  if (typeof did !== "string" || !did.startsWith(DID_KEY) || did.length > DID_KEY_MAX_CHARS) {
    throw new DidKeyError("not a did:key");
  }
  let bytes: Uint8Array;
  try {
    bytes = base58.decode(did.slice(DID_KEY.length));
  } catch {
    throw new DidKeyError("did:key is not base58btc");
  }
  if (bytes.length !== prefix.length + keyLength || bytes[0] !== prefix[0] || bytes[1] !== prefix[1]) {
    throw new DidKeyError(`did:key is not ${what}`);
  }
  return bytes.slice(prefix.length);
}

/** A did:key of `key` under a multicodec prefix. */
function didKeyOf(prefix: Uint8Array, key: Uint8Array): string {
  const bytes = new Uint8Array(prefix.length + key.length);
  bytes.set(prefix);
  bytes.set(key, prefix.length);
  return DID_KEY + base58.encode(bytes);
}

/** The 65-byte uncompressed form of a P-256 did:key's point (what WebCrypto imports as raw). */
export function p256UncompressedFromDidKey(did: string): Uint8Array {
  return decodeP256(did).uncompressed.slice();
}

export const isP256DidKey = acceptedBy(decodeP256);

function pointOf(bytes: Uint8Array) {
  try {
    const point = p256.Point.fromBytes(bytes);
    point.assertValidity();
    return point;
  } catch {
    throw new DidKeyError("not a point on P-256");
  }
}

// ---- Ed25519 (multicodec ed25519-pub 0xed, varint 0xed 0x01): a private space's read key -----

const ED25519_PREFIX = Uint8Array.of(0xed, 0x01);

/** The did:key of a 32-byte Ed25519 public key. */
export function ed25519DidKey(publicKey: Uint8Array): string {
  if (!(publicKey instanceof Uint8Array) || publicKey.length !== 32) throw new DidKeyError("an Ed25519 public key is 32 bytes");
  return didKeyOf(ED25519_PREFIX, publicKey);
}

/** The 32-byte public key an Ed25519 did:key names; throws DidKeyError for anything else. */
export function ed25519FromDidKey(did: string): Uint8Array {
  return keyFromDidKey(did, ED25519_PREFIX, 32, "an Ed25519 key");
}

export const isEd25519DidKey = acceptedBy(ed25519FromDidKey);
