// RFC 8188 "aes128gcm" content coding: a header (salt, record size, key id) and AES-128-GCM
// records, each ending in a delimiter (0x01, or 0x02 for the last) and optional zero padding.
// Pure: @noble/ciphers and @noble/hashes only. Every decoding failure throws EceError.
import { gcm } from "@noble/ciphers/aes.js";
import { expand, extract } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { concatBytes, randomBytes, utf8Encode } from "../encoding";

export class EceError extends Error {}

const TAG = 16;
const KEY_INFO = utf8Encode("Content-Encoding: aes128gcm\0");
const NONCE_INFO = utf8Encode("Content-Encoding: nonce\0");
/** Smallest record size RFC 8188 allows: one byte of content (the delimiter) plus the tag. */
const MIN_RECORD_SIZE = 18;

interface EceHeader {
  salt: Uint8Array;
  recordSize: number;
  keyId: Uint8Array;
  /** Length of the header in bytes (21 + key id length). */
  length: number;
}

/** The content-encryption key and nonce base for one salt and input keying material (RFC 8188 §2.2, §2.3). */
export function deriveKeyAndNonce(ikm: Uint8Array, salt: Uint8Array): { cek: Uint8Array; nonce: Uint8Array } {
  const prk = extract(sha256, ikm, salt);
  return { cek: expand(sha256, prk, KEY_INFO, 16), nonce: expand(sha256, prk, NONCE_INFO, 12) };
}

function recordNonce(base: Uint8Array, seq: number): Uint8Array {
  const n = base.slice();
  // XOR the 96-bit big-endian sequence number into the base; seq stays well below 2^32 here.
  for (let i = 0, s = seq; i < 4; i++, s = Math.floor(s / 256)) n[11 - i] ^= s & 0xff;
  return n;
}

function encodeHeader(salt: Uint8Array, recordSize: number, keyId: Uint8Array): Uint8Array {
  if (salt.length !== 16) throw new EceError("salt must be 16 bytes");
  if (keyId.length > 255) throw new EceError("key id longer than 255 bytes");
  if (!Number.isInteger(recordSize) || recordSize < MIN_RECORD_SIZE || recordSize > 0xffffffff) {
    throw new EceError("record size out of range");
  }
  const h = new Uint8Array(21 + keyId.length);
  h.set(salt, 0);
  new DataView(h.buffer).setUint32(16, recordSize);
  h[20] = keyId.length;
  h.set(keyId, 21);
  return h;
}

export function decodeHeader(body: Uint8Array): EceHeader {
  if (body.length < 21) throw new EceError("shorter than the aes128gcm header");
  const recordSize = new DataView(body.buffer, body.byteOffset, body.byteLength).getUint32(16);
  if (recordSize < MIN_RECORD_SIZE) throw new EceError("record size below 18");
  const idLen = body[20];
  if (body.length < 21 + idLen) throw new EceError("truncated key id");
  return { salt: body.slice(0, 16), recordSize, keyId: body.slice(21, 21 + idLen), length: 21 + idLen };
}

interface EceEncryptOptions {
  ikm: Uint8Array;
  /** 16 bytes; random when absent. */
  salt?: Uint8Array;
  recordSize?: number;
  keyId?: Uint8Array;
}

/** Encrypts `plaintext` into as few records as fit, without padding. */
export function eceEncrypt(plaintext: Uint8Array, opts: EceEncryptOptions): Uint8Array {
  const salt = opts.salt ?? randomBytes(16);
  const rs = opts.recordSize ?? 4096;
  const header = encodeHeader(salt, rs, opts.keyId ?? new Uint8Array(0));
  const { cek, nonce } = deriveKeyAndNonce(opts.ikm, salt);
  const perRecord = rs - TAG - 1; // content bytes a record carries besides its delimiter
  const parts: Uint8Array[] = [header];
  let seq = 0;
  for (let off = 0; ; off += perRecord, seq++) {
    const end = Math.min(plaintext.length, off + perRecord);
    const last = end === plaintext.length;
    const rec = new Uint8Array(end - off + 1);
    rec.set(plaintext.subarray(off, end));
    rec[rec.length - 1] = last ? 2 : 1;
    parts.push(gcm(cek, recordNonce(nonce, seq)).encrypt(rec));
    if (last) break;
  }
  return concatBytes(...parts);
}

/** Decrypts an aes128gcm body with its input keying material; `ikmFor` may pick it by key id. */
export function eceDecrypt(body: Uint8Array, ikmFor: Uint8Array | ((header: EceHeader) => Uint8Array)): Uint8Array {
  const header = decodeHeader(body);
  const ikm = typeof ikmFor === "function" ? ikmFor(header) : ikmFor;
  const { cek, nonce } = deriveKeyAndNonce(ikm, header.salt);
  const rs = header.recordSize;
  const out: Uint8Array[] = [];
  let off = header.length;
  if (off >= body.length) throw new EceError("no records");
  for (let seq = 0; off < body.length; seq++) {
    const end = Math.min(body.length, off + rs);
    const rec = body.subarray(off, end);
    if (rec.length <= TAG) throw new EceError("record shorter than its tag");
    let plain: Uint8Array;
    try {
      plain = gcm(cek, recordNonce(nonce, seq)).decrypt(rec);
    } catch {
      throw new EceError("record does not decrypt");
    }
    let i = plain.length - 1;
    while (i >= 0 && plain[i] === 0) i--;
    if (i < 0) throw new EceError("record has no delimiter");
    const isLast = end === body.length;
    if (plain[i] !== (isLast ? 2 : 1)) throw new EceError(isLast ? "last record is not marked last" : "record marked last before the end");
    out.push(plain.subarray(0, i));
    off = end;
  }
  return concatBytes(...out);
}
