// Tally peer envelopes (the Tally protocol §4, §5).
//
// Version 3 (sent): ciphertext = NIP-44 v2 payload of JSON.stringify(signed inner) under
//   getConversationKey(my secret, hex(to_user_id)). Self-addressed envelopes (from == to, §13.2)
//   use ECDH with one's own key.
// Version 2 (decrypt-only, §5.1-5.2): key = SHA-256(ECDH x-coordinate), AES-256-GCM with a
//   12-byte IV, ciphertext = base64(iv ‖ ct ‖ tag).
// Anything else is rejected ("unknown_version"); version 1 is not accepted.
//
// NIP-44 v2 caps a plaintext at 65535 UTF-8 bytes, so a signed inner message must serialize to at
// most that many bytes: sealEnvelope throws otherwise, and a sender splits large payloads (for
// example sync_data entries) over several messages.
import { TALLY_LIMITS } from "../limits";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { gcm } from "@noble/ciphers/aes.js";
import { sha256 } from "@noble/hashes/sha2.js";
import * as z from "zod";
import { base64Decode, base64Encode, concatBytes, hexToBytes, isBase64, randomBytes, utf8Decode, utf8Encode } from "../encoding";
import { getPublicKeyHex, isNpub, npubDecode, npubEncode } from "./keys";
import { decrypt as nip44Decrypt, encrypt as nip44Encrypt, getConversationKey } from "./nip44";
import { verifyInner } from "./proof";

export const ENVELOPE_VERSION = 3;
const LEGACY_ENVELOPE_VERSION = 2;
/** Envelope ids are 1 to this many characters (the relay's bound, shared/limits.ts). */
const ENVELOPE_ID_MAX_CHARS = TALLY_LIMITS.max_envelope_id_chars;

export const peerEnvelopeSchema = z.looseObject({
  type: z.literal("peer_envelope"),
  envelope_version: z.number().int(),
  id: z.string().min(1).max(ENVELOPE_ID_MAX_CHARS),
  from_user_id: z.string().refine(isNpub, { message: "expected an npub" }),
  to_user_id: z.string().refine(isNpub, { message: "expected an npub" }),
  ciphertext: z.string().min(1).refine(isBase64, { message: "expected standard base64" }),
});

export type PeerEnvelope = z.infer<typeof peerEnvelopeSchema>;

interface SealableInner {
  id: string;
  from_user_id: string;
  to_user_id: string;
  [k: string]: unknown;
}

type OpenEnvelopeFailure =
  | "malformed"
  | "unknown_version"
  | "decrypt_failed"
  | "bad_json"
  | "id_mismatch"
  | "from_mismatch"
  | "to_mismatch"
  | "not_for_me"
  | "bad_proof";

type OpenEnvelopeResult = { ok: true; inner: Record<string, unknown> } | { ok: false; reason: OpenEnvelopeFailure };

function checkSealable(inner: SealableInner, secretKey: Uint8Array): void {
  if (typeof inner.id !== "string" || inner.id.length < 1 || inner.id.length > ENVELOPE_ID_MAX_CHARS) {
    throw new Error("sealEnvelope: id must be a string of 1..128 characters");
  }
  if (!isNpub(inner.to_user_id)) throw new Error("sealEnvelope: to_user_id is not an npub");
  if (inner.from_user_id !== npubEncode(getPublicKeyHex(secretKey))) {
    throw new Error("sealEnvelope: from_user_id is not the npub of the sealing key");
  }
}

function header(inner: SealableInner, version: number, ciphertext: string): PeerEnvelope {
  return {
    type: "peer_envelope",
    envelope_version: version,
    id: inner.id,
    from_user_id: inner.from_user_id,
    to_user_id: inner.to_user_id,
    ciphertext,
  };
}

/** Version 3 envelope. Throws if the inner message is not sealable by this key or is too large. */
export function sealEnvelope(signedInner: SealableInner, secretKey: Uint8Array): PeerEnvelope {
  checkSealable(signedInner, secretKey);
  const key = conversationKey(secretKey, npubDecode(signedInner.to_user_id));
  return header(signedInner, ENVELOPE_VERSION, nip44Encrypt(JSON.stringify(signedInner), key));
}

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

/** Version 2 envelope (AES-256-GCM). For tests and compatibility only: clients send version 3. */
export function sealLegacyV2(signedInner: SealableInner, secretKey: Uint8Array): PeerEnvelope {
  checkSealable(signedInner, secretKey);
  const key = legacyV2Key(secretKey, npubDecode(signedInner.to_user_id));
  const iv = randomBytes(12);
  const ct = gcm(key, iv).encrypt(utf8Encode(JSON.stringify(signedInner)));
  return header(signedInner, LEGACY_ENVELOPE_VERSION, base64Encode(concatBytes(iv, ct)));
}

function decryptV3(ciphertext: string, mySecret: Uint8Array, fromHex: string): string {
  return nip44Decrypt(ciphertext, conversationKey(mySecret, fromHex));
}

function decryptV2(ciphertext: string, mySecret: Uint8Array, fromHex: string): string {
  const data = base64Decode(ciphertext);
  if (data.length < 12 + 16) throw new Error("too short");
  const key = legacyV2Key(mySecret, fromHex);
  return utf8Decode(gcm(key, data.subarray(0, 12)).decrypt(data.subarray(12)));
}

const fail = (reason: OpenEnvelopeFailure): OpenEnvelopeResult => ({ ok: false, reason });

/**
 * The §5.3 receiver checks, in order: envelope shape and recognised version; decryption with the
 * key for (me, from_user_id); the plaintext is a JSON object; inner id / from_user_id / to_user_id
 * equal the envelope's; inner.to_user_id is my own npub; the authorship proof verifies. Never throws.
 */
export function openEnvelope(envelope: unknown, mySecret: Uint8Array): OpenEnvelopeResult {
  try {
    if (typeof envelope !== "object" || envelope === null || Array.isArray(envelope)) return fail("malformed");
    const version = (envelope as Record<string, unknown>).envelope_version;
    if (version !== ENVELOPE_VERSION && version !== LEGACY_ENVELOPE_VERSION) return fail("unknown_version");
    const parsed = peerEnvelopeSchema.safeParse(envelope);
    if (!parsed.success) return fail("malformed");
    const env = parsed.data;
    const fromHex = npubDecode(env.from_user_id);

    let plaintext: string;
    try {
      plaintext =
        version === ENVELOPE_VERSION ? decryptV3(env.ciphertext, mySecret, fromHex) : decryptV2(env.ciphertext, mySecret, fromHex);
    } catch {
      return fail("decrypt_failed");
    }

    let inner: unknown;
    try {
      inner = JSON.parse(plaintext);
    } catch {
      return fail("bad_json");
    }
    if (typeof inner !== "object" || inner === null || Array.isArray(inner)) return fail("bad_json");
    const msg = inner as Record<string, unknown>;

    if (msg.id !== env.id) return fail("id_mismatch");
    if (msg.from_user_id !== env.from_user_id) return fail("from_mismatch");
    if (msg.to_user_id !== env.to_user_id) return fail("to_mismatch");
    if (msg.to_user_id !== npubEncode(getPublicKeyHex(mySecret))) return fail("not_for_me");
    if (!verifyInner(msg)) return fail("bad_proof");
    return { ok: true, inner: msg };
  } catch {
    return fail("malformed");
  }
}
