// NIP-01 events: schema, id computation, BIP-340 signing and verification.
// Pure module: runs in workerd, Node and browsers.
import { schnorr } from "@noble/curves/secp256k1.js";
import { sha256 } from "@noble/hashes/sha2.js";
import * as z from "zod";
import { bytesToHex, hexToBytes, isHex, utf8Encode } from "../encoding";

const lowerHex = (bytes: number) =>
  z.string().refine((s) => isHex(s, bytes), { message: `expected ${bytes * 2} lowercase hex characters` });

/** Largest accepted kind: kinds must fit a signed 32-bit integer (0 .. 2^31 - 1). */
const MAX_EVENT_KIND = 2 ** 31 - 1;

export const nostrEventSchema = z.object({
  id: lowerHex(32),
  pubkey: lowerHex(32),
  created_at: z.number().int().min(0),
  kind: z.number().int().min(0).max(MAX_EVENT_KIND),
  tags: z.array(z.array(z.string())),
  content: z.string(),
  sig: lowerHex(64),
});

export type NostrEvent = z.infer<typeof nostrEventSchema>;

export interface EventTemplate {
  kind: number;
  created_at: number;
  tags: string[][];
  content: string;
}

/** NIP-01 id: hex SHA-256 of the UTF-8 JSON of [0, pubkey, created_at, kind, tags, content]. */
export function getEventHash(ev: Omit<NostrEvent, "id" | "sig">): string {
  const serialized = JSON.stringify([0, ev.pubkey, ev.created_at, ev.kind, ev.tags, ev.content]);
  return bytesToHex(sha256(utf8Encode(serialized)));
}

/** Fills in pubkey, id and a BIP-340 signature (fresh auxiliary randomness). */
export function finalizeEvent(template: EventTemplate, secretKey: Uint8Array): NostrEvent {
  const pubkey = bytesToHex(schnorr.getPublicKey(secretKey));
  const unsigned = {
    pubkey,
    created_at: template.created_at,
    kind: template.kind,
    tags: template.tags.map((t) => [...t]),
    content: template.content,
  };
  const id = getEventHash(unsigned);
  const sig = bytesToHex(schnorr.sign(hexToBytes(id), secretKey));
  return { id, ...unsigned, sig };
}

/** Schema check, id recomputation and signature check. Never throws. */
export function verifyEvent(ev: unknown): ev is NostrEvent {
  try {
    const parsed = nostrEventSchema.safeParse(ev);
    if (!parsed.success) return false;
    const e = parsed.data;
    if (getEventHash(e) !== e.id) return false;
    return signatureValid(e);
  } catch {
    return false;
  }
}

/**
 * The BIP-340 signature of `e.id` by `e.pubkey` alone, for a caller that has already checked the
 * event's shape (nostrEventSchema) and its id (getEventHash), as checkAuthEvent has: one schema
 * pass and one hash per event, not two. Never throws.
 */
export function signatureValid(e: Pick<NostrEvent, "id" | "pubkey" | "sig">): boolean {
  try {
    return schnorr.verify(hexToBytes(e.sig), hexToBytes(e.id), hexToBytes(e.pubkey));
  } catch {
    return false;
  }
}
