import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { bytesToHex } from "../../../../../shared/encoding";
import { derivePassphraseKey, derivePassphraseKeySync, passphraseSeed } from "../../../../../clients/passnote/protocol/passphrase";

const { vectors } = JSON.parse(readFileSync(new URL("../../../../fixtures/passnote-passphrase.vectors.json", import.meta.url), "utf8")) as {
  vectors: { passphrase: string; salt: string; seed: string; key: string }[];
};

describe("passphrase to key: BIP39 seed, then Argon2id (19 MiB, 2 passes, 1 lane), 32 bytes", () => {
  it("the first step is the BIP39 seed of the phrase (published vector), NFKD-normalised", () => {
    for (const v of vectors) expect(bytesToHex(passphraseSeed(v.passphrase))).toBe(v.seed);
    // NFC and NFKD spellings of one phrase give one seed.
    expect(bytesToHex(passphraseSeed("pässphrase"))).toBe(bytesToHex(passphraseSeed("pa\u0308ssphrase")));
  });

  it("the key matches the pinned vectors (async and sync alike)", async () => {
    const [first, ...rest] = vectors;
    expect(bytesToHex(await derivePassphraseKey(first.passphrase, first.salt))).toBe(first.key);
    for (const v of rest) expect(bytesToHex(derivePassphraseKeySync(v.passphrase, v.salt))).toBe(v.key);
  });

  it("an empty passphrase or a salt under 8 bytes is refused", async () => {
    await expect(derivePassphraseKey("", "myapp:v1")).rejects.toThrow(/non-empty/);
    await expect(derivePassphraseKey("x", "short")).rejects.toThrow(/8 bytes/);
  });
});
