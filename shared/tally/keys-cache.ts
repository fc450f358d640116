// Keys derived from a secret key and a peer's public key (the Tally protocol §5.2): the NIP-44 v2
// conversation key (version 3 envelopes) and the legacy version 2 key, cached per peer.
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { gcm } from "@noble/ciphers/aes.js";
import { base64Decode, hexToBytes, utf8Decode } from "../encoding";
import { getConversationKey } from "./nip44";

/**
 * §5.2: derived keys are cached in memory per peer (a scalar multiplication each time otherwise),
 * for as long as the secret key's bytes object lives (a WeakMap keyed by it), at most
 * KEY_CACHE_PEERS peers per secret key and kind (emptied when full).
 */
const KEY_CACHE_PEERS = 1_024;
const keyCache = new WeakMap<Uint8Array, Map<string, Uint8Array>>();

function cachedKey(secretKey: Uint8Array, kind: "v2" | "v3", peerHex: string, derive: () => Uint8Array): Uint8Array {
  let peers = keyCache.get(secretKey);
  if (!peers) {
    peers = new Map();
    keyCache.set(secretKey, peers);
  }
  const k = `${kind}:${peerHex}`;
  let key = peers.get(k);
  if (!key) {
    if (peers.size >= KEY_CACHE_PEERS * 2) peers.clear();
    key = derive();
    peers.set(k, key);
  }
  return key;
}

/** §5.1-5.2: SHA-256 of the ECDH x-coordinate, the peer's x-only key lifted to even y; cached per peer. */
export function legacyV2Key(secretKey: Uint8Array, peerPubkeyHex: string): Uint8Array {
  return cachedKey(secretKey, "v2", peerPubkeyHex, () => {
    const shared = secp256k1.getSharedSecret(secretKey, hexToBytes("02" + peerPubkeyHex));
    return sha256(shared.subarray(1, 33));
  });
}

/** The NIP-44 v2 conversation key with a peer (version 3), cached per peer like the v2 key. */
export function conversationKey(secretKey: Uint8Array, peerPubkeyHex: string): Uint8Array {
  return cachedKey(secretKey, "v3", peerPubkeyHex, () => getConversationKey(secretKey, peerPubkeyHex));
}

/** The plaintext of a version 2 envelope's ciphertext (base64 of iv ‖ ct ‖ tag) from the peer. Throws when it does not open. */
export function legacyV2Decrypt(ciphertext: string, secretKey: Uint8Array, peerPubkeyHex: string): string {
  const data = base64Decode(ciphertext);
  if (data.length < 12 + 16) throw new Error("too short");
  const key = legacyV2Key(secretKey, peerPubkeyHex);
  return utf8Decode(gcm(key, data.subarray(0, 12)).decrypt(data.subarray(12)));
}
