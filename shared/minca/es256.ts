// ES256 over WebCrypto (present in workerd, Node and browsers): P-256 keys named by did:key,
// signatures in the 64-byte r‖s form WebCrypto produces, as unpadded base64url on the wire.
// WebCrypto's verify accepts high-S signatures (docs/hostile.md: verifiers must), so nothing
// here normalises s.
import { base64urlDecode, base64urlEncode, EncodingError } from "../encoding";
import { MINCA_HOST_LIMITS } from "../limits";
import { RecentMap } from "../recent-map";
import { p256DidKey, p256UncompressedFromDidKey } from "./did-key";

const ALG = { name: "ECDSA", namedCurve: "P-256" } as const;
const SIGN = { name: "ECDSA", hash: "SHA-256" } as const;

/** A copy WebCrypto's types accept (a Uint8Array over a plain ArrayBuffer). */
const buf = (b: Uint8Array): Uint8Array<ArrayBuffer> => new Uint8Array(b);

export interface P256Key {
  did: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
}

/** A fresh P-256 key. Extractable only when asked (a program that saves its key must). */
export async function newP256Key(extractable = false): Promise<P256Key> {
  const pair = (await crypto.subtle.generateKey(ALG, extractable, ["sign", "verify"])) as CryptoKeyPair;
  return keyFromPair(pair.privateKey, pair.publicKey);
}

async function keyFromPair(privateKey: CryptoKey, publicKey: CryptoKey): Promise<P256Key> {
  const raw = new Uint8Array((await crypto.subtle.exportKey("raw", publicKey)) as ArrayBuffer);
  return { did: p256DidKey(raw), privateKey, publicKey };
}

/** A key saved as a private JWK (kept by a program between runs). */
export async function p256KeyFromJwk(jwk: JsonWebKey): Promise<P256Key> {
  const privateKey = await crypto.subtle.importKey("jwk", jwk, ALG, true, ["sign"]);
  const { d: _d, key_ops: _ops, ...pub } = jwk;
  const publicKey = await crypto.subtle.importKey("jwk", { ...pub, key_ops: ["verify"] }, ALG, true, ["verify"]);
  return keyFromPair(privateKey, publicKey);
}

export async function p256KeyToJwk(key: P256Key): Promise<JsonWebKey> {
  return (await crypto.subtle.exportKey("jwk", key.privateKey)) as JsonWebKey;
}

/** 64-byte r‖s signature over `bytes`. */
export async function es256Sign(key: P256Key | CryptoKey, bytes: Uint8Array): Promise<Uint8Array> {
  const k = "privateKey" in key ? key.privateKey : key;
  return new Uint8Array(await crypto.subtle.sign(SIGN, k, buf(bytes)));
}

/** The same, as unpadded base64url. */
export async function es256SignB64(key: P256Key | CryptoKey, bytes: Uint8Array): Promise<string> {
  return base64urlEncode(await es256Sign(key, bytes));
}

/** Whether `sig` (64 bytes r‖s, or its base64url) is an ES256 signature by `did` over `bytes`. False for anything malformed. */
export async function es256Verify(did: string, sig: Uint8Array | string, bytes: Uint8Array): Promise<boolean> {
  let raw: Uint8Array;
  try {
    raw = typeof sig === "string" ? base64urlDecode(sig) : sig;
  } catch (e) {
    if (e instanceof EncodingError) return false;
    throw e;
  }
  if (raw.length !== 64) return false;
  const key = await verifyKeyOf(did);
  if (key === null) return false;
  return crypto.subtle.verify(SIGN, key, buf(raw), buf(bytes));
}

/** WebCrypto verify keys imported lately, by did (a key is a pure function of its did); only keys that imported are kept. */
const verifyKeys = new RecentMap<string, CryptoKey>(MINCA_HOST_LIMITS.decoded_keys_kept);

/** The WebCrypto verify key a P-256 did:key names; null for anything that is not one. */
async function verifyKeyOf(did: string): Promise<CryptoKey | null> {
  const hit = verifyKeys.get(did);
  if (hit !== undefined) return hit;
  let key: CryptoKey;
  try {
    key = await crypto.subtle.importKey("raw", buf(p256UncompressedFromDidKey(did)), ALG, false, ["verify"]);
  } catch {
    return null;
  }
  verifyKeys.set(did, key);
  return key;
}
