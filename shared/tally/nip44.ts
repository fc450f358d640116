// NIP-44 version 2 (https://github.com/nostr-protocol/nips/blob/master/44.md), exactly as specified:
// plaintexts of 1..65535 UTF-8 bytes, payloads of 132..87472 base64 characters. The extended-length
// prefix some libraries accept for larger messages (0x0000 ‖ u32) is not NIP-44 v2 and is rejected.
//
// decrypt and getConversationKey take untrusted input: every failure is a Nip44Error.
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { chacha20 } from "@noble/ciphers/chacha.js";
import { expand, extract } from "@noble/hashes/hkdf.js";
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { base64Decode, base64Encode, concatBytes, equalBytes, hexToBytes, randomBytes, utf8Decode, utf8Encode } from "../encoding";

export class Nip44Error extends Error {
  constructor(message: string) {
    super(message);
    this.name = "Nip44Error";
  }
}

const NIP44_VERSION = 2;
const MIN_PLAINTEXT_SIZE = 1;
export const MAX_PLAINTEXT_SIZE = 65535;
const MIN_PAYLOAD_CHARS = 132;
const MAX_PAYLOAD_CHARS = 87472;
const MIN_DATA_BYTES = 99;
const MAX_DATA_BYTES = 65603;
const SALT = utf8Encode("nip44-v2");
const HEX64 = /^[0-9a-fA-F]{64}$/;

function isBytes(a: unknown, len: number): a is Uint8Array {
  return a instanceof Uint8Array && a.length === len;
}

/** HKDF-extract(sha256, IKM = ECDH x-coordinate (pubkey lifted to even y), salt = "nip44-v2"). */
export function getConversationKey(secretKey: Uint8Array, pubkeyHex: string): Uint8Array {
  if (!isBytes(secretKey, 32)) throw new Nip44Error("invalid secret key");
  if (typeof pubkeyHex !== "string" || !HEX64.test(pubkeyHex)) throw new Nip44Error("invalid public key");
  let shared: Uint8Array;
  try {
    shared = secp256k1.getSharedSecret(secretKey, hexToBytes("02" + pubkeyHex));
  } catch {
    throw new Nip44Error("invalid key pair");
  }
  return extract(sha256, shared.subarray(1, 33), SALT);
}

interface MessageKeys {
  chacha_key: Uint8Array;
  chacha_nonce: Uint8Array;
  hmac_key: Uint8Array;
}

/** HKDF-expand(sha256, PRK = conversation key, info = nonce, L = 76) split 32 / 12 / 32. */
export function getMessageKeys(conversationKey: Uint8Array, nonce: Uint8Array): MessageKeys {
  if (!isBytes(conversationKey, 32)) throw new Nip44Error("invalid conversation key");
  if (!isBytes(nonce, 32)) throw new Nip44Error("invalid nonce");
  const keys = expand(sha256, conversationKey, nonce, 76);
  return {
    chacha_key: keys.subarray(0, 32),
    chacha_nonce: keys.subarray(32, 44),
    hmac_key: keys.subarray(44, 76),
  };
}

/** Padded length for a plaintext of `len` bytes (len >= 1). */
export function calcPaddedLen(len: number): number {
  if (!Number.isSafeInteger(len) || len < 1 || len > 0xffffffff) throw new Nip44Error("invalid length");
  if (len <= 32) return 32;
  const nextPower = 2 ** (32 - Math.clz32(len - 1)); // 1 << (floor(log2(len - 1)) + 1)
  const chunk = nextPower <= 256 ? 32 : nextPower / 8;
  return chunk * (Math.floor((len - 1) / chunk) + 1);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function pad(plaintext: string): Uint8Array {
  if (typeof plaintext !== "string") throw new Nip44Error("plaintext must be a string");
  // UTF-8 needs at least one byte per UTF-16 code unit: reject huge strings before encoding them.
  if (plaintext.length > MAX_PLAINTEXT_SIZE) throw new Nip44Error("invalid plaintext size");
  // TextEncoder would silently turn a lone surrogate into U+FFFD; refuse instead.
  if (LONE_SURROGATE.test(plaintext)) throw new Nip44Error("plaintext is not well-formed UTF-16");
  const unpadded = utf8Encode(plaintext);
  const len = unpadded.length;
  if (len < MIN_PLAINTEXT_SIZE || len > MAX_PLAINTEXT_SIZE) throw new Nip44Error("invalid plaintext size");
  const out = new Uint8Array(2 + calcPaddedLen(len));
  out[0] = len >> 8;
  out[1] = len & 0xff;
  out.set(unpadded, 2);
  return out;
}

function unpad(padded: Uint8Array): string {
  const len = padded.length >= 2 ? (padded[0] << 8) | padded[1] : 0;
  if (len < MIN_PLAINTEXT_SIZE || padded.length !== 2 + calcPaddedLen(len)) throw new Nip44Error("invalid padding");
  const unpadded = padded.subarray(2, 2 + len);
  if (unpadded.length !== len) throw new Nip44Error("invalid padding");
  try {
    return utf8Decode(unpadded);
  } catch {
    throw new Nip44Error("invalid utf-8");
  }
}

function hmacAad(key: Uint8Array, message: Uint8Array, aad: Uint8Array): Uint8Array {
  return hmac(sha256, key, concatBytes(aad, message));
}

export function encrypt(plaintext: string, conversationKey: Uint8Array, nonce: Uint8Array = randomBytes(32)): string {
  const { chacha_key, chacha_nonce, hmac_key } = getMessageKeys(conversationKey, nonce);
  const padded = pad(plaintext);
  const ciphertext = chacha20(chacha_key, chacha_nonce, padded);
  const mac = hmacAad(hmac_key, ciphertext, nonce);
  return base64Encode(concatBytes(new Uint8Array([NIP44_VERSION]), nonce, ciphertext, mac));
}

function decodePayload(payload: unknown): { nonce: Uint8Array; ciphertext: Uint8Array; mac: Uint8Array } {
  if (typeof payload !== "string") throw new Nip44Error("payload must be a string");
  const plen = payload.length;
  if (plen === 0 || payload[0] === "#") throw new Nip44Error("unknown version");
  if (plen < MIN_PAYLOAD_CHARS || plen > MAX_PAYLOAD_CHARS) throw new Nip44Error("invalid payload size");
  let data: Uint8Array;
  try {
    data = base64Decode(payload);
  } catch {
    throw new Nip44Error("invalid base64");
  }
  const dlen = data.length;
  if (dlen < MIN_DATA_BYTES || dlen > MAX_DATA_BYTES) throw new Nip44Error("invalid data size");
  if (data[0] !== NIP44_VERSION) throw new Nip44Error("unknown version " + data[0]);
  return { nonce: data.subarray(1, 33), ciphertext: data.subarray(33, dlen - 32), mac: data.subarray(dlen - 32) };
}

/**
 * Throws a Nip44Error when `payload` cannot be a NIP-44 v2 payload (size, base64, version); what
 * is checked before a key is needed, so a signer that holds the key elsewhere is not asked.
 */
export function checkPayload(payload: unknown): void {
  decodePayload(payload);
}

/** Decrypts a NIP-44 v2 payload. Throws only Nip44Error. */
export function decrypt(payload: string, conversationKey: Uint8Array): string {
  try {
    if (!isBytes(conversationKey, 32)) throw new Nip44Error("invalid conversation key");
    const { nonce, ciphertext, mac } = decodePayload(payload);
    const { chacha_key, chacha_nonce, hmac_key } = getMessageKeys(conversationKey, nonce);
    if (!equalBytes(hmacAad(hmac_key, ciphertext, nonce), mac)) throw new Nip44Error("invalid MAC");
    return unpad(chacha20(chacha_key, chacha_nonce, ciphertext));
  } catch (e) {
    if (e instanceof Nip44Error) throw e;
    throw new Nip44Error("decryption failed");
  }
}
