// Authorship proofs for Tally inner messages (the Tally protocol §3.3).
//
// DECISION (the project docs copy this block):
//
// An inner message is a JSON object
//   { id, type, from_user_id: <npub>, to_user_id: <npub>, created_at: <ISO-8601>, payload, ...unknown }
// carrying exactly one authorship proof. Its digest is
//   digest = hex(SHA-256(UTF-8(canonicalJson(inner without the keys "signature" and "proof"))))
// with canonicalJson as in shared/tally/canonical.ts (keys sorted by UTF-16 code unit at every
// depth, no whitespace). Unknown fields are part of the digest, so they survive forwarding intact.
//
// 1. Current form, proof type "tally-nostr-event-v1" (TIP-006): a field
//      proof: { type: "tally-nostr-event-v1", event: <NIP-01 event> }
//    where the event has kind 177700, pubkey = hex of from_user_id, content = digest,
//    tags free (signers write [["t","tally-proof"]]; the Tally protocol names no tag, so receivers require none),
//    created_at = signing time (Unix seconds; not otherwise checked), and a valid id and BIP-340 sig.
//    An external NIP-07 signer can produce it with signEvent.
// 2. Legacy form, "tally-canonical-schnorr-v1" (before TIP-006, accepted on receipt only): a field
//      signature: <128 lowercase hex BIP-340 signature over the 32 digest bytes>
//    Verification computes the digest with "signature" removed and, if that fails, with
//    "signature" set to "" (the Tally protocol allows either reading).
//
// Verification takes the public key from from_user_id (an npub). If a "proof" field is present it
// alone decides (a broken proof is not rescued by a legacy signature); otherwise "signature" decides.
// Ledger entries (§12.6) are verified by rebuilding the inner message exactly (shared/tally/entry.ts:
// created_at := originated_at, timestamp removed, and the entry's inner_fields restored).
import { schnorr } from "@noble/curves/secp256k1.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, hexToBytes, isHex, utf8Encode } from "../encoding";
import { finalizeEvent, verifyEvent, type NostrEvent } from "../nostr/event";
import { canonicalJson, innerDigestHex } from "./canonical";
import { getPublicKeyHex, npubDecode, npubEncode } from "./keys";
import { ledgerEntryToInner } from "./entry";
import type { TallySigner } from "./signer";

export const PROOF_EVENT_KIND = 177700;
export const PROOF_TYPE = "tally-nostr-event-v1";
export const LEGACY_PROOF_TYPE = "tally-canonical-schnorr-v1";
const PROOF_TAG: readonly [string, string] = ["t", "tally-proof"];

interface TallyProof {
  type: typeof PROOF_TYPE;
  event: NostrEvent;
}

function assertSigner(inner: object, secretKey: Uint8Array): void {
  const from = (inner as Record<string, unknown>).from_user_id;
  const mine = npubEncode(getPublicKeyHex(secretKey));
  if (from !== mine) throw new Error("signInner: from_user_id is not the npub of the signing key");
}

/** Attaches a tally-nostr-event-v1 proof. Throws if from_user_id is not the signer's npub. */
export function signInner<T extends object>(
  inner: T,
  secretKey: Uint8Array,
  nowSeconds: number = Math.floor(Date.now() / 1000),
): T & { proof: TallyProof } {
  assertSigner(inner, secretKey);
  const digest = innerDigestHex(inner as Record<string, unknown>);
  const event = finalizeEvent({ kind: PROOF_EVENT_KIND, created_at: nowSeconds, tags: [[...PROOF_TAG]], content: digest }, secretKey);
  return { ...inner, proof: { type: PROOF_TYPE, event } };
}

/**
 * signInner through a signer (the key need not be here; `myPubkeyHex` is the signer's key).
 * Throws if from_user_id is not that key's npub, when the signer fails, and when the event it
 * signed is not by that key.
 */
export async function signInnerWith<T extends object>(
  inner: T,
  signer: TallySigner,
  myPubkeyHex: string,
  nowSeconds: number = Math.floor(Date.now() / 1000),
): Promise<T & { proof: TallyProof }> {
  if ((inner as Record<string, unknown>).from_user_id !== npubEncode(myPubkeyHex)) {
    throw new Error("signInner: from_user_id is not the npub of the signing key");
  }
  const digest = innerDigestHex(inner as Record<string, unknown>);
  const event = await signer.signEvent({ kind: PROOF_EVENT_KIND, created_at: nowSeconds, tags: [[...PROOF_TAG]], content: digest });
  if (event.pubkey !== myPubkeyHex || event.content !== digest || event.kind !== PROOF_EVENT_KIND) {
    throw new Error("signInner: the signer's event is not this proof by this key");
  }
  return { ...inner, proof: { type: PROOF_TYPE, event } };
}

/** Attaches a legacy tally-canonical-schnorr-v1 signature (tests and old records only). */
export function signInnerLegacy<T extends object>(inner: T, secretKey: Uint8Array): T & { signature: string } {
  assertSigner(inner, secretKey);
  const { proof: _proof, ...rest } = inner as Record<string, unknown>;
  const digest = innerDigestHex(rest);
  const signature = bytesToHex(schnorr.sign(hexToBytes(digest), secretKey));
  return { ...(rest as T), signature };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function verifyNostrProof(inner: Record<string, unknown>, pubkeyHex: string): boolean {
  const proof = inner.proof;
  if (!isPlainObject(proof) || proof.type !== PROOF_TYPE) return false;
  const ev = proof.event;
  if (!verifyEvent(ev)) return false;
  if (ev.kind !== PROOF_EVENT_KIND || ev.pubkey !== pubkeyHex) return false;
  return ev.content === innerDigestHex(inner);
}

function verifyLegacy(inner: Record<string, unknown>, pubkeyHex: string): boolean {
  const sig = inner.signature;
  if (!isHex(sig, 64)) return false;
  const { signature: _s, ...rest } = inner;
  const digests = [sha256(utf8Encode(canonicalJson(rest))), sha256(utf8Encode(canonicalJson({ ...rest, signature: "" })))];
  const sigBytes = hexToBytes(sig);
  const pub = hexToBytes(pubkeyHex);
  return digests.some((d) => schnorr.verify(sigBytes, d, pub));
}

/** Verifies the authorship proof (either form) against from_user_id. Never throws. */
export function verifyInner(inner: unknown): boolean {
  try {
    if (!isPlainObject(inner)) return false;
    const pubkeyHex = npubDecode(inner.from_user_id as string);
    if (inner.proof !== undefined) return verifyNostrProof(inner, pubkeyHex);
    if (inner.signature !== undefined) return verifyLegacy(inner, pubkeyHex);
    return false;
  } catch {
    return false;
  }
}

/** Rebuilds the inner message from a §12.6 ledger entry and verifies its proof. Never throws. */
export function verifyLedgerEntry(entry: unknown): boolean {
  try {
    if (!isPlainObject(entry) || typeof entry.originated_at !== "string") return false;
    return verifyInner(ledgerEntryToInner(entry));
  } catch {
    return false;
  }
}
