// The Passnote protocol, "The layer stack": the kind byte, plain frames (0x00) under the roster key, and a
// fail-closed opener (fuzzed at a fixed seed).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { concatBytes, randomBytes, utf8Encode } from "../../../../../shared/encoding";
import { KIND_PLAIN, KIND_RATCHET, openFrame, openPlain, sealFrame, sealPlain } from "../../../../../clients/passnote/protocol/seal";

describe("the Passnote protocol: the kind byte", () => {
  it("a plain frame is 0x00 ‖ nonce (24) ‖ XChaCha20-Poly1305(roster key, nonce, frame)", () => {
    const key = randomBytes(32);
    const sealed = sealPlain(key, utf8Encode("frame"));
    expect(sealed[0]).toBe(KIND_PLAIN);
    expect(xchacha20poly1305(key, sealed.subarray(1, 25)).decrypt(sealed.subarray(25))).toEqual(utf8Encode("frame"));
    expect(openPlain(key, sealed)).toEqual(utf8Encode("frame"));
  });

  it("another roster key, another kind byte, or a passphrase-mode message (no kind byte) does not open as plain", () => {
    const key = randomBytes(32);
    const sealed = sealPlain(key, utf8Encode("frame"));
    expect(openPlain(randomBytes(32), sealed)).toBeNull();
    expect(openPlain(key, concatBytes(Uint8Array.of(KIND_RATCHET), sealed.subarray(1)))).toBeNull();
    expect(openPlain(key, sealFrame(key, utf8Encode("frame")))).toBeNull();
    expect(openFrame(key, sealed)).toBeNull();
  });

  it("the plain opener is fail-closed (fuzz, fixed seed): random and corrupted bytes never throw and never open", () => {
    const key = randomBytes(32);
    const real = sealPlain(key, utf8Encode("a real frame"));
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(), fc.integer({ min: 1, max: 255 }), (junk, at, x) => {
        for (const bytes of [junk, concatBytes(Uint8Array.of(KIND_PLAIN), junk)]) {
          let out: unknown = "unset";
          expect(() => (out = openPlain(key, bytes))).not.toThrow();
          expect(out).toBeNull();
        }
        const bad = real.slice();
        bad[1 + (at % (bad.length - 1))] ^= x;
        expect(openPlain(key, bad)).toBeNull();
        expect(openPlain(key, bad.subarray(0, at % bad.length))).toBeNull();
      }),
      { seed: 71, numRuns: 400 },
    );
  });
});
