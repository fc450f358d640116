// Spaces (docs/hosting.md, 8.3 profile): a constitution that hashes to the space's id, the 32-byte
// space key of a private space and what is derived one way from it (the read key, whose did:key
// is the constitution's `readKey`, and the body key that seals bodies), and the carry space an
// account derives for one carrier (the Minca protocol §4.2).
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { ed25519 } from "@noble/curves/ed25519.js";
import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import * as z from "zod";
import { parseClientJson } from "../client-json";
import { concatBytes, randomBytes, base64urlEncode, utf8Decode, utf8Encode } from "../encoding";
import { MINCA_HOST_LIMITS } from "../limits";
import { ed25519DidKey, isEd25519DidKey, isP256DidKey } from "./did-key";
import { mincaId } from "./id";
import { canonicalize } from "./jcs";

export const SPACE_KEY_BYTES = 32;
const READ_KEY_LABEL = "minca/read-key/v1";
const BODY_KEY_LABEL = "minca/body-key/v1";
const CARRY_SPACE_LABEL = "minca/carry-space/v1";
const NONCE_BYTES = 24;

export const constitutionSchema = z
  .object({
    v: z.literal(1),
    founders: z.array(z.string().refine(isP256DidKey, "a founder is a P-256 did:key")).min(1).max(MINCA_HOST_LIMITS.max_founders),
    visibility: z.enum(["private", "public"]),
    readKey: z.string().refine(isEd25519DidKey, "readKey is an Ed25519 did:key").optional(),
    nonce: z.string().min(1).max(MINCA_HOST_LIMITS.max_name_chars),
  })
  .strict()
  .refine((c) => (c.visibility === "private") === (c.readKey !== undefined), "a private space, and only one, names its readKey");
export type Constitution = z.infer<typeof constitutionSchema>;

/** The space id: "b" + base32(SHA-256(UTF-8(JCS(constitution)))) — "the space hashes to its id". */
export function spaceId(constitution: Constitution): string {
  return mincaId(utf8Encode(canonicalize(constitution)));
}

function derive(spaceKey: Uint8Array, label: string): Uint8Array {
  if (spaceKey.length !== SPACE_KEY_BYTES) throw new RangeError("a space key is 32 bytes");
  return hkdf(sha256, spaceKey, new Uint8Array(0), utf8Encode(label), 32);
}

/** The read key's Ed25519 seed: HKDF-SHA256(space key, info "minca/read-key/v1", 32). */
export function readSeedOf(spaceKey: Uint8Array): Uint8Array {
  return derive(spaceKey, READ_KEY_LABEL);
}

/** The did:key of the read key a 32-byte seed makes. */
export function readKeyDid(readSeed: Uint8Array): string {
  return ed25519DidKey(ed25519.getPublicKey(readSeed));
}

/** The body key: HKDF-SHA256(space key, info "minca/body-key/v1", 32). */
export function bodyKeyOf(spaceKey: Uint8Array): Uint8Array {
  return derive(spaceKey, BODY_KEY_LABEL);
}

/** sealed = 24-byte nonce ‖ XChaCha20-Poly1305(body key, nonce, UTF-8(JCS(body))). */
export function sealBody(bodyKey: Uint8Array, body: unknown): Uint8Array {
  const nonce = randomBytes(NONCE_BYTES);
  return concatBytes(nonce, xchacha20poly1305(bodyKey, nonce).encrypt(utf8Encode(canonicalize(body))));
}

/** The body a sealed box holds; null when it does not open under this key or is not JSON. */
export function openBody(bodyKey: Uint8Array, sealed: Uint8Array): unknown | null {
  if (sealed.length < NONCE_BYTES + 16) return null;
  let text: string;
  try {
    text = utf8Decode(xchacha20poly1305(bodyKey, sealed.subarray(0, NONCE_BYTES)).decrypt(sealed.subarray(NONCE_BYTES)));
  } catch {
    return null;
  }
  const json = parseClientJson(text);
  return json.ok ? json.value : null;
}

export interface Space {
  id: string;
  constitution: Constitution;
  /** Private spaces only. */
  key?: Uint8Array;
}

/** A new space founded by `founders` (a private one gets a fresh key). */
export function newSpace(opts: { founders: string[]; visibility: "private" | "public"; nonce?: string; key?: Uint8Array }): Space {
  const nonce = opts.nonce ?? base64urlEncode(randomBytes(16));
  if (opts.visibility === "public") {
    const constitution = constitutionSchema.parse({ v: 1, founders: opts.founders, visibility: "public", nonce });
    return { id: spaceId(constitution), constitution };
  }
  const key = opts.key ?? randomBytes(SPACE_KEY_BYTES);
  const constitution = constitutionSchema.parse({
    v: 1,
    founders: opts.founders,
    visibility: "private",
    readKey: readKeyDid(readSeedOf(key)),
    nonce,
  });
  return { id: spaceId(constitution), constitution, key };
}

/**
 * The carry space of an account for one carrier (docs/hosting.md): space key =
 * HKDF-SHA256(account key, info "minca/carry-space/v1" ‖ 0 ‖ carrier did ‖ 0 ‖ decimal gen, 32);
 * private, the account its one founder, nonce "carry:<carrier did>:<gen>". Every device derives
 * the same one.
 */
export function carrySpace(accountKey: Uint8Array, accountDid: string, carrierDid: string, gen: number): Space {
  if (!Number.isSafeInteger(gen) || gen < 0) throw new RangeError("gen is a non-negative integer");
  if (accountKey.length !== 32) throw new RangeError("the account key is 32 bytes");
  const info = concatBytes(
    utf8Encode(CARRY_SPACE_LABEL),
    Uint8Array.of(0),
    utf8Encode(carrierDid),
    Uint8Array.of(0),
    utf8Encode(String(gen)),
  );
  const key = hkdf(sha256, accountKey, new Uint8Array(0), info, 32);
  return newSpace({ founders: [accountDid], visibility: "private", nonce: carryNonce(carrierDid, gen), key });
}

export function carryNonce(carrierDid: string, gen: number): string {
  return `carry:${carrierDid}:${gen}`;
}
