// The device's keys at rest, for the Passnote stores. A store never writes them in the clear where
// it can do better: the bytes below are sealed (nonce ‖ ciphertext ‖ tag) before they reach the
// database, under either
//   - a 32-byte wrapping key (XChaCha20-Poly1305; e.g. derivePassphraseKey of a passphrase the
//     person types when the app opens: then the database alone does not give the keys away), or
//   - a non-extractable WebCrypto AES-GCM key (browsers: the IndexedDB store makes one and keeps
//     the CryptoKey object itself, which no script can export, beside the sealed keys).
// Associated data binds a sealed blob to its purpose, so it cannot be swapped for another blob.
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import * as z from "zod";
import {
  base64urlDecode,
  base64urlEncode,
  concatBytes,
  randomBytes,
  toArrayBuffer,
  utf8Decode,
  utf8Encode,
} from "../../../shared/encoding";
import type { StoredKeys } from "../protocol/records";

const AAD = utf8Encode("passnote-store-keys-v1");
const b32 = z.string().regex(/^[A-Za-z0-9_-]{43}$/);
const keysSchema = z.union([
  z.strictObject({ mode: z.literal("identity"), rosterKey: b32, groupKey: b32, owner: b32, deviceKey: b32 }),
  z.strictObject({ mode: z.literal("passphrase"), key: b32 }),
]);

/** How a store seals the keys it keeps. */
export interface KeySeal {
  seal(plain: Uint8Array): Promise<Uint8Array>;
  /** The same, at once, where the seal needs no asynchronous API (not WebCrypto). */
  sealSync?(plain: Uint8Array): Uint8Array;
  /** The plain bytes, or throws (wrong wrapping key, or a blob that was changed). */
  open(sealed: Uint8Array): Promise<Uint8Array>;
}

export function encodeKeys(k: StoredKeys): Uint8Array {
  const e = base64urlEncode;
  const o =
    "key" in k
      ? { mode: "passphrase", key: e(k.key) }
      : {
          mode: "identity",
          rosterKey: e(k.identity.group.rosterKey),
          groupKey: e(k.identity.group.groupKey),
          owner: e(k.identity.group.owner),
          deviceKey: e(k.identity.deviceKey),
        };
  return utf8Encode(JSON.stringify(o));
}

/** The keys a database held; throws a plain Error when the bytes are not keys this SDK wrote. */
export function decodeKeys(bytes: Uint8Array): StoredKeys {
  let json: unknown;
  try {
    json = JSON.parse(utf8Decode(bytes));
  } catch {
    json = undefined;
  }
  const parsed = keysSchema.safeParse(json);
  if (!parsed.success) throw new Error("the database's keys are not readable: not written by this SDK");
  const o = parsed.data;
  const d = base64urlDecode;
  if (o.mode === "passphrase") return { key: d(o.key) };
  return { identity: { deviceKey: d(o.deviceKey), group: { rosterKey: d(o.rosterKey), groupKey: d(o.groupKey), owner: d(o.owner) } } };
}

/** Seals under a 32-byte wrapping key (XChaCha20-Poly1305, random 24-byte nonce). */
export function wrappingKeySeal(wrappingKey: Uint8Array): KeySeal {
  if (wrappingKey.length !== 32) throw new Error("the wrapping key is 32 bytes (derivePassphraseKey gives one)");
  const sealSync = (plain: Uint8Array) => {
    const nonce = randomBytes(24);
    return concatBytes(nonce, xchacha20poly1305(wrappingKey, nonce, AAD).encrypt(plain));
  };
  return {
    sealSync,
    seal: async (plain) => sealSync(plain),
    async open(sealed) {
      try {
        return xchacha20poly1305(wrappingKey, sealed.subarray(0, 24), AAD).decrypt(sealed.subarray(24));
      } catch {
        throw new Error("the database's keys do not open under this wrapping key (wrong passphrase?)");
      }
    },
  };
}

/** Seals under a WebCrypto AES-GCM key (non-extractable where the store made it; random 12-byte IV). */
export function cryptoKeySeal(key: CryptoKey): KeySeal {
  return {
    async seal(plain) {
      const iv = randomBytes(12);
      const ct = await crypto.subtle.encrypt(
        { name: "AES-GCM", iv: toArrayBuffer(iv), additionalData: toArrayBuffer(AAD) },
        key,
        toArrayBuffer(plain),
      );
      return concatBytes(iv, new Uint8Array(ct));
    },
    async open(sealed) {
      try {
        const pt = await crypto.subtle.decrypt(
          { name: "AES-GCM", iv: toArrayBuffer(sealed.slice(0, 12)), additionalData: toArrayBuffer(AAD) },
          key,
          toArrayBuffer(sealed.slice(12)),
        );
        return new Uint8Array(pt);
      } catch {
        throw new Error("the database's keys do not open under its key: the database was changed");
      }
    },
  };
}

/** Keeps the keys as they are (only where the app chose it: `keys: "plain"`). */
export const plainKeySeal: KeySeal = { seal: async (p) => p, sealSync: (p) => p, open: async (s) => s };
