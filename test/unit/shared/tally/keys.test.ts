import { describe, expect, it } from "vitest";
import fc from "fast-check";
import * as nip19 from "nostr-tools/nip19";
import { getPublicKey } from "nostr-tools/pure";
import { bech32 } from "@scure/base";
import { generateSecretKey, getPublicKeyHex, isNpub, npubDecode, npubEncode, userIdToHex } from "../../../../shared/tally/keys";

// NIP-19's own example.
const HEX = "3bf0c63fcb93463407af97a5e5ee64fa883d107ef9e558472c4eb9aaaefa459d";
const NPUB = "npub180cvv07tjdrrgpa0j7j7tmnyl2yr6yr7l8j4s3evf6u64th6gkwsyjh6w6";

describe("§2 identities: npub and hex", () => {
  it("§2: npub encoding matches the NIP-19 example both ways", () => {
    expect(npubEncode(HEX)).toBe(NPUB);
    expect(npubDecode(NPUB)).toBe(HEX);
    expect(npubEncode(HEX.toUpperCase())).toBe(NPUB);
  });

  it("§2: npub round trip agrees with nostr-tools' nip19 for random keys", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (bytes) => {
        const hex = Buffer.from(bytes).toString("hex");
        const npub = npubEncode(hex);
        expect(npub).toBe(nip19.npubEncode(hex));
        expect(npubDecode(npub)).toBe(hex);
        expect(isNpub(npub)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it("§2: anything that is not a canonical npub with a 32-byte payload is rejected", () => {
    const words = bech32.decode(NPUB as `${string}1${string}`).words;
    const bytes = bech32.fromWords(words);
    const bad = [
      "",
      HEX,
      NPUB.toUpperCase(), // valid bech32, but not the canonical lowercase form
      "Npub" + NPUB.slice(4), // mixed case
      NPUB.slice(0, -1) + (NPUB.endsWith("q") ? "p" : "q"), // checksum
      nip19.nsecEncode(bytes), // wrong prefix
      nip19.noteEncode(HEX), // wrong prefix
      bech32.encode("npub", bech32.toWords(bytes.subarray(0, 31))), // 31 bytes
      bech32.encode("npub", bech32.toWords(new Uint8Array([...bytes, 1]))), // 33 bytes
      " " + NPUB,
      NPUB + " ",
    ];
    for (const b of bad) {
      expect(() => npubDecode(b), b).toThrow(Error);
      expect(isNpub(b)).toBe(false);
    }
    expect(() => npubDecode(42 as unknown as string)).toThrow(Error);
    expect(() => npubEncode("xyz")).toThrow(Error);
  });

  it("§2: isNpub never throws on arbitrary values", () => {
    fc.assert(
      fc.property(fc.anything(), (v) => {
        expect(isNpub(v)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it("§1: public keys are x-only BIP-340 keys (same as nostr-tools)", () => {
    for (let i = 0; i < 5; i++) {
      const sk = generateSecretKey();
      expect(sk.length).toBe(32);
      expect(getPublicKeyHex(sk)).toBe(getPublicKey(sk));
      expect(getPublicKeyHex(sk)).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  it("§2: userIdToHex accepts an npub or 64 hex characters", () => {
    expect(userIdToHex(NPUB)).toBe(HEX);
    expect(userIdToHex(HEX)).toBe(HEX);
    expect(userIdToHex(HEX.toUpperCase())).toBe(HEX);
    expect(() => userIdToHex(HEX.slice(2))).toThrow(Error);
    expect(() => userIdToHex("nsec1xyz")).toThrow(Error);
  });
});
