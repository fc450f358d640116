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
import { gcm } from "@noble/ciphers/aes.js";
import * as z from "zod";
import { base64Encode, concatBytes, isBase64, randomBytes, utf8Encode } from "../encoding";
import { getPublicKeyHex, isNpub, npubDecode, npubEncode } from "./keys";
import { checkPayload, decrypt as nip44Decrypt, encrypt as nip44Encrypt, MAX_PLAINTEXT_SIZE } from "./nip44";
import { SignerError, type TallySigner } from "./signer";
import { conversationKey, legacyV2Decrypt, legacyV2Key } from "./keys-cache";

export { conversationKey, legacyV2Key };
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
  checkSealableBy(inner, npubEncode(getPublicKeyHex(secretKey)));
}

function checkSealableBy(inner: SealableInner, myNpub: string): void {
  if (typeof inner.id !== "string" || inner.id.length < 1 || inner.id.length > ENVELOPE_ID_MAX_CHARS) {
    throw new Error("sealEnvelope: id must be a string of 1..128 characters");
  }
  if (!isNpub(inner.to_user_id)) throw new Error("sealEnvelope: to_user_id is not an npub");
  if (inner.from_user_id !== myNpub) {
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

const fail = (reason: OpenEnvelopeFailure): OpenEnvelopeResult => ({ ok: false, reason });

type Parsed = { ok: true; env: PeerEnvelope; version: number; fromHex: string } | { ok: false; reason: OpenEnvelopeFailure };

/** The envelope's shape and recognised version (the first checks of §5.3). */
function parseEnvelope(envelope: unknown): Parsed {
  if (typeof envelope !== "object" || envelope === null || Array.isArray(envelope)) return { ok: false, reason: "malformed" };
  const version = (envelope as Record<string, unknown>).envelope_version;
  if (version !== ENVELOPE_VERSION && version !== LEGACY_ENVELOPE_VERSION) return { ok: false, reason: "unknown_version" };
  const parsed = peerEnvelopeSchema.safeParse(envelope);
  if (!parsed.success) return { ok: false, reason: "malformed" };
  return { ok: true, env: parsed.data, version, fromHex: npubDecode(parsed.data.from_user_id) };
}

/** The §5.3 checks after decryption: a JSON object whose ids match the envelope's, for me, with a valid proof. */
function checkPlaintext(plaintext: string, env: PeerEnvelope, myNpub: string): OpenEnvelopeResult {
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
  if (msg.to_user_id !== myNpub) return fail("not_for_me");
  if (!verifyInner(msg)) return fail("bad_proof");
  return { ok: true, inner: msg };
}

/**
 * The §5.3 receiver checks, in order: envelope shape and recognised version; decryption with the
 * key for (me, from_user_id); the plaintext is a JSON object; inner id / from_user_id / to_user_id
 * equal the envelope's; inner.to_user_id is my own npub; the authorship proof verifies. Never throws.
 */
export function openEnvelope(envelope: unknown, mySecret: Uint8Array): OpenEnvelopeResult {
  try {
    const p = parseEnvelope(envelope);
    if (!p.ok) return p;
    let plaintext: string;
    try {
      plaintext =
        p.version === ENVELOPE_VERSION
          ? decryptV3(p.env.ciphertext, mySecret, p.fromHex)
          : legacyV2Decrypt(p.env.ciphertext, mySecret, p.fromHex);
    } catch {
      return fail("decrypt_failed");
    }
    return checkPlaintext(plaintext, p.env, npubEncode(getPublicKeyHex(mySecret)));
  } catch {
    return fail("malformed");
  }
}

/** An envelope a signer could not open: not a verdict on the envelope (it is kept and tried again). */
type SignerFailure = { ok: false; reason: "signer_failed"; error: unknown };

/**
 * openEnvelope through a signer (the key need not be here): the same checks in the same order.
 * Only the signer itself failing (a SignerError, or a version 2 envelope to a signer that cannot
 * open those) gives "signer_failed"; a payload that is no NIP-44 v2 payload is "decrypt_failed"
 * before the signer is asked. Never throws.
 */
export async function openEnvelopeWith(
  envelope: unknown,
  signer: TallySigner,
  myPubkeyHex: string,
): Promise<OpenEnvelopeResult | SignerFailure> {
  try {
    const p = parseEnvelope(envelope);
    if (!p.ok) return p;
    let plaintext: string;
    try {
      if (p.version === ENVELOPE_VERSION) {
        checkPayload(p.env.ciphertext);
        plaintext = await signer.nip44Decrypt(p.fromHex, p.env.ciphertext);
      } else {
        if (!signer.legacyDecrypt)
          return { ok: false, reason: "signer_failed", error: new SignerError("this signer cannot open version 2 envelopes") };
        plaintext = await signer.legacyDecrypt(p.fromHex, p.env.ciphertext);
      }
    } catch (error) {
      if (error instanceof SignerError) return { ok: false, reason: "signer_failed", error };
      return fail("decrypt_failed");
    }
    return checkPlaintext(plaintext, p.env, npubEncode(myPubkeyHex));
  } catch {
    return fail("malformed");
  }
}

/**
 * sealEnvelope through a signer: `myPubkeyHex` is the signer's key. Throws if the inner message
 * is not sealable by it or is too large, and when the signer fails.
 */
export async function sealEnvelopeWith(signedInner: SealableInner, signer: TallySigner, myPubkeyHex: string): Promise<PeerEnvelope> {
  checkSealableBy(signedInner, npubEncode(myPubkeyHex));
  const plaintext = JSON.stringify(signedInner);
  if (utf8Encode(plaintext).length > MAX_PLAINTEXT_SIZE) throw new Error("sealEnvelope: the signed inner message is over 65535 bytes");
  return header(signedInner, ENVELOPE_VERSION, await signer.nip44Encrypt(npubDecode(signedInner.to_user_id), plaintext));
}
