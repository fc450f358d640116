// A passphrase to the 32-byte key of passphrase-only mode (or a wrapping key for a store's device
// keys). The protocol text this project implements is silent on the derivation; this profile
// follows the published Passnote reference library's documented pipeline:
//   seed = PBKDF2-HMAC-SHA512(password = NFKD(passphrase), salt = "mnemonic", 2048 rounds, 64 bytes)
//          (the BIP39 seed of the phrase, with an empty BIP39 passphrase)
//   key  = Argon2id(password = seed, salt = UTF-8(salt), m = 19 MiB (19,456 KiB), t = 2, p = 1, 32 bytes)
// The salt is the app's own label (at least 8 bytes, e.g. "myapp:v1"): every device of a group
// derives with the same one. The reference library's own vectors were not available to check
// against; test/fixtures/passnote-passphrase.vectors.json pins this derivation's outputs, with the
// PBKDF2 step recomputed independently.
import { argon2id, argon2idAsync } from "@noble/hashes/argon2.js";
import { pbkdf2 } from "@noble/hashes/pbkdf2.js";
import { sha512 } from "@noble/hashes/sha2.js";
import { utf8Encode } from "../../../shared/encoding";

const PASSPHRASE_KDF = {
  pbkdf2Rounds: 2048,
  argonMemoryKiB: 19 * 1024,
  argonPasses: 2,
  argonLanes: 1,
  keyBytes: 32,
  minSaltBytes: 8,
} as const;

/** The BIP39 seed of a phrase (empty BIP39 passphrase): the first step. */
export function passphraseSeed(passphrase: string): Uint8Array {
  if (typeof passphrase !== "string" || passphrase.length === 0) throw new Error("the passphrase is a non-empty string");
  return pbkdf2(sha512, utf8Encode(passphrase.normalize("NFKD")), utf8Encode("mnemonic"), { c: PASSPHRASE_KDF.pbkdf2Rounds, dkLen: 64 });
}

function saltBytes(salt: string): Uint8Array {
  const s = utf8Encode(salt);
  if (s.length < PASSPHRASE_KDF.minSaltBytes)
    throw new Error(`the salt is at least ${PASSPHRASE_KDF.minSaltBytes} bytes of UTF-8 (an app label such as "myapp:v1")`);
  return s;
}

const argonOpts = () => ({
  m: PASSPHRASE_KDF.argonMemoryKiB,
  t: PASSPHRASE_KDF.argonPasses,
  p: PASSPHRASE_KDF.argonLanes,
  dkLen: PASSPHRASE_KDF.keyBytes,
});

/**
 * The 32-byte key of a passphrase, under the app's salt. Deliberately slow (about a second of
 * Argon2id): it yields to the event loop while it runs, so a page stays responsive.
 */
export async function derivePassphraseKey(passphrase: string, salt: string): Promise<Uint8Array> {
  return argon2idAsync(passphraseSeed(passphrase), saltBytes(salt), argonOpts());
}

/** derivePassphraseKey without yielding (scripts, workers). */
export function derivePassphraseKeySync(passphrase: string, salt: string): Uint8Array {
  return argon2id(passphraseSeed(passphrase), saltBytes(salt), argonOpts());
}
