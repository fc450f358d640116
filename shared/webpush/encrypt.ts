// RFC 8291 message encryption for Web Push: an ephemeral P-256 key pair per message, ECDH with
// the subscription's p256dh key, the auth secret mixed in by HKDF, then one aes128gcm record
// (RFC 8188) whose key id is the sender's public key.
import { p256 } from "@noble/curves/nist.js";
import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { concatBytes, randomBytes, utf8Encode } from "../encoding";
import { WEBPUSH_LIMITS } from "../limits";
import { EceError, eceDecrypt, eceEncrypt } from "./ece";

const KEY_INFO = utf8Encode("WebPush: info\0");

export interface PushKeys {
  /** The user agent's public key, 65 bytes uncompressed (PushSubscription keys.p256dh). */
  p256dh: Uint8Array;
  /** The 16-byte authentication secret (keys.auth). */
  auth: Uint8Array;
}

export interface EncryptOptions {
  /** The sender's ephemeral private key (32 bytes); fresh for every message when absent. */
  senderPrivateKey?: Uint8Array;
  /** 16-byte salt; random when absent. */
  salt?: Uint8Array;
}

/** Input keying material for the aes128gcm record (RFC 8291 §3.3, §3.4). */
export function pushIkm(ecdhSecret: Uint8Array, auth: Uint8Array, uaPublic: Uint8Array, asPublic: Uint8Array): Uint8Array {
  return hkdf(sha256, ecdhSecret, auth, concatBytes(KEY_INFO, uaPublic, asPublic), 32);
}

function ecdh(privateKey: Uint8Array, publicKey: Uint8Array): Uint8Array {
  return p256.getSharedSecret(privateKey, publicKey, false).subarray(1, 33);
}

function checkKeys(keys: PushKeys): void {
  if (keys.p256dh.length !== 65 || keys.p256dh[0] !== 4) throw new EceError("p256dh must be an uncompressed P-256 point");
  if (keys.auth.length !== 16) throw new EceError("auth must be 16 bytes");
  try {
    p256.Point.fromBytes(keys.p256dh).assertValidity();
  } catch {
    throw new EceError("p256dh is not a point on P-256");
  }
}

/** The body of one push message: aes128gcm, one record of WEBPUSH_LIMITS.record_size. */
export function encryptPushMessage(plaintext: Uint8Array, keys: PushKeys, opts: EncryptOptions = {}): Uint8Array {
  if (plaintext.length > WEBPUSH_LIMITS.max_payload_bytes) throw new EceError("push payload too large");
  checkKeys(keys);
  const asPrivate = opts.senderPrivateKey ?? p256.utils.randomSecretKey();
  const asPublic = p256.getPublicKey(asPrivate, false);
  const ikm = pushIkm(ecdh(asPrivate, keys.p256dh), keys.auth, keys.p256dh, asPublic);
  return eceEncrypt(plaintext, {
    ikm,
    salt: opts.salt ?? randomBytes(16),
    recordSize: WEBPUSH_LIMITS.record_size,
    keyId: asPublic,
  });
}

/**
 * The user agent's side: opens a push message body with the subscription's private key and auth
 * secret. Throws EceError on anything malformed (wrong key id, bad record, bad tag).
 */
export function decryptPushMessage(body: Uint8Array, uaPrivateKey: Uint8Array, auth: Uint8Array): Uint8Array {
  const uaPublic = p256.getPublicKey(uaPrivateKey, false);
  return eceDecrypt(body, (header) => {
    if (header.keyId.length !== 65 || header.keyId[0] !== 4) throw new EceError("key id is not an uncompressed P-256 point");
    let secret: Uint8Array;
    try {
      secret = ecdh(uaPrivateKey, header.keyId);
    } catch {
      throw new EceError("key id is not a point on P-256");
    }
    return pushIkm(secret, auth, uaPublic, header.keyId);
  });
}
