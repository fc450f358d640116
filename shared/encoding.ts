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

export function isBase64(s: unknown): s is string {
  if (typeof s !== "string" || s.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(s)) return false;
  try {
    base64.decode(s);
    return true;
  } catch {
    return false;
  }
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
const decoder = new TextDecoder("utf-8", { fatal: true });

export function utf8Encode(s: string): Uint8Array {
  return encoder.encode(s);
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
