// The code channel's cryptography (the Minca protocol section 3 and the docs/minca-rooms.md profile): the
// commitment, the two direction keys, sealing bound to {type, seq}, and the six-digit check.
import { x25519 } from "@noble/curves/ed25519.js";
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { base64urlDecode, base64urlEncode, concatBytes, equalBytes, randomBytes, utf8Decode, utf8Encode } from "../../../shared/encoding";
import { canonicalize } from "../../../shared/minca/jcs";

const KEY_LABEL = "minca/code-key/v1";
const CHECK_LABEL = "minca/code-check/v1";
const SEAL_LABEL = "minca/code/v1";
const NONCE_BYTES = 24;
const POINT_BYTES = 32;

type Side = "home" | "program";

export interface Point {
  secret: Uint8Array;
  /** The 32-byte X25519 public point: O for the home, J for the program. */
  point: Uint8Array;
}

/** A fresh X25519 key pair: one per exchange, on each side. */
export function newPoint(): Point {
  const secret = x25519.utils.randomSecretKey();
  return { secret, point: x25519.getPublicKey(secret) };
}

/** The program's commitment to its point: SHA-256(J). */
export function commitment(point: Uint8Array): Uint8Array {
  return sha256(point);
}

export function keepsCommitment(point: Uint8Array, commit: Uint8Array): boolean {
  return point.length === POINT_BYTES && equalBytes(sha256(point), commit);
}

export interface ChannelKeys {
  /** Seals what the home sends (the program opens with it). */
  home: Uint8Array;
  /** Seals what the program sends. */
  program: Uint8Array;
  /** The six digits both ends show or ask for. */
  check: string;
}

/**
 * The keys and check of one exchange. ikm = secret ‖ X25519(mine, theirs); transcript = O ‖ J.
 * Throws on a point that gives the all-zero shared secret.
 */
export function channelKeys(secret: Uint8Array, mine: Uint8Array, theirs: Uint8Array, O: Uint8Array, J: Uint8Array): ChannelKeys {
  const shared = x25519.getSharedSecret(mine, theirs);
  const ikm = concatBytes(secret, shared);
  const transcript = concatBytes(O, J);
  const key = (side: Side) => hkdf(sha256, ikm, new Uint8Array(0), concatBytes(utf8Encode(KEY_LABEL), utf8Encode(side), transcript), 32);
  const c = hkdf(sha256, ikm, new Uint8Array(0), concatBytes(utf8Encode(CHECK_LABEL), transcript), 4);
  const n = new DataView(c.buffer, c.byteOffset, 4).getUint32(0, false);
  return { home: key("home"), program: key("program"), check: String(n % 1_000_000).padStart(6, "0") };
}

function aad(type: string, seq: number): Uint8Array {
  return concatBytes(utf8Encode(SEAL_LABEL), utf8Encode(canonicalize({ seq, type })));
}

/** base64url(nonce ‖ XChaCha20-Poly1305(key, nonce, UTF-8(JSON body), aad({type, seq}))). */
export function seal(key: Uint8Array, type: string, seq: number, body: unknown): string {
  const nonce = randomBytes(NONCE_BYTES);
  const ct = xchacha20poly1305(key, nonce, aad(type, seq)).encrypt(utf8Encode(JSON.stringify(body)));
  return base64urlEncode(concatBytes(nonce, ct));
}

/** The body sealed as the `seq`th message of `type`, or null when it does not open as exactly that. */
export function open(key: Uint8Array, type: string, seq: number, payload: unknown): unknown | null {
  if (typeof payload !== "string") return null;
  try {
    const bytes = base64urlDecode(payload);
    if (bytes.length < NONCE_BYTES + 16) return null;
    const plain = xchacha20poly1305(key, bytes.subarray(0, NONCE_BYTES), aad(type, seq)).decrypt(bytes.subarray(NONCE_BYTES));
    return JSON.parse(utf8Decode(plain)) as unknown;
  } catch {
    return null;
  }
}
