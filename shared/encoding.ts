// Byte encodings used across the protocols. Thin, strict wrappers over @scure/base:
// every decoder rejects malformed input by throwing EncodingError, never by guessing.
import { base64, base64urlnopad, hex } from "@scure/base";

export class EncodingError extends Error {}

export function bytesToHex(bytes: Uint8Array): string {
  return hex.encode(bytes);
}

/** Lowercase or uppercase hex, even length. */
export function hexToBytes(s: string): Uint8Array {
  if (typeof s !== "string" || s.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(s)) {
    throw new EncodingError("invalid hex");
  }
  return hex.decode(s.toLowerCase());
}

export function isHex(s: unknown, bytes: number): s is string {
  return typeof s === "string" && s.length === bytes * 2 && /^[0-9a-f]*$/.test(s);
}

/** Standard base64 with padding (RFC 4648 section 4). */
export function base64Encode(bytes: Uint8Array): string {
  return base64.encode(bytes);
}

export function base64Decode(s: string): Uint8Array {
  try {
    return base64.decode(s);
  } catch {
    throw new EncodingError("invalid base64");
  }
}

const BASE64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/**
 * Whether base64Decode would accept `s`, without decoding it: the alphabet, the length, the
 * padding, and the bits a padded ending leaves over, which must be zero.
 */
export function isBase64(s: unknown): s is string {
  if (typeof s !== "string" || s.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(s)) return false;
  const pad = s.endsWith("==") ? 2 : s.endsWith("=") ? 1 : 0;
  if (pad === 0) return true;
  const last = BASE64_ALPHABET.indexOf(s[s.length - 1 - pad]);
  return (last & (pad === 2 ? 0x0f : 0x03)) === 0;
}

/** A type guard from a decoder: whether `decode` accepts the value, a string, without throwing. */
export function acceptedBy(decode: (s: string) => unknown): (s: unknown) => s is string {
  return (s: unknown): s is string => {
    if (typeof s !== "string") return false;
    try {
      decode(s);
      return true;
    } catch {
      return false;
    }
  };
}

/** Unpadded base64url (RFC 4648 section 5), as every signature and key on the Passnote and Minca wires. */
export function base64urlEncode(bytes: Uint8Array): string {
  return base64urlnopad.encode(bytes);
}

export function base64urlDecode(s: string): Uint8Array {
  if (typeof s !== "string" || !/^[A-Za-z0-9_-]*$/.test(s)) throw new EncodingError("invalid base64url");
  try {
    return base64urlnopad.decode(s);
  } catch {
    throw new EncodingError("invalid base64url");
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

export function utf8Encode(s: string): Uint8Array {
  return encoder.encode(s);
}

/**
 * The length of a string in UTF-8, as utf8Encode(s).length, without encoding it: a lone surrogate
 * counts 3 bytes (TextEncoder writes U+FFFD for it), a surrogate pair 4.
 */
export function utf8ByteLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 2; // the pair: 2 code units, 4 bytes
      i++;
    } else n += 2;
  }
  return n;
}

const exactDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Strict UTF-8 that keeps every code point, a leading U+FEFF included (utf8Decode strips it, as
 * text formats expect): for protocol strings that must round-trip byte for byte.
 */
export function utf8DecodeExact(bytes: Uint8Array): string {
  try {
    return exactDecoder.decode(bytes);
  } catch {
    throw new EncodingError("invalid utf-8");
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether a string is well-formed Unicode (no lone surrogate), so UTF-8 carries it exactly. */
export function isWellFormedUnicode(s: string): boolean {
  return !LONE_SURROGATE.test(s);
}

/** Strict UTF-8: invalid sequences throw EncodingError. */
export function utf8Decode(bytes: Uint8Array): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw new EncodingError("invalid utf-8");
  }
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export function randomBytes(n: number): Uint8Array {
  const b = new Uint8Array(n);
  crypto.getRandomValues(b);
  return b;
}

/** Constant-time comparison of two byte strings. */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
  return d === 0;
}

/** The bytes as an ArrayBuffer of exactly their length (SQLite BLOB values): no copy when `b` spans its whole buffer. */
export function toArrayBuffer(b: Uint8Array): ArrayBuffer {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer
    ? b.buffer
    : (b.slice().buffer as ArrayBuffer);
}
