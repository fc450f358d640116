import { describe, expect, it } from "vitest";
import fc from "fast-check";
import vectors from "../../../fixtures/webpush.vectors.json";
import { EceError, decodeHeader, deriveKeyAndNonce, eceDecrypt, eceEncrypt } from "../../../../shared/webpush/ece";
import { base64urlDecode as d, base64urlEncode as e, utf8Encode } from "../../../../shared/encoding";

const V1 = vectors.rfc8188_3_1;
const V2 = vectors.rfc8188_3_2;

function expectEceError(fn: () => unknown): void {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(EceError);
    return;
  }
  throw new Error("expected an EceError, nothing was thrown");
}

describe("RFC 8188 aes128gcm", () => {
  it("§3.1: the key and nonce derive from the salt and IKM", () => {
    const { cek, nonce } = deriveKeyAndNonce(d(V1.ikm), d(V1.salt));
    expect(e(cek)).toBe(V1.cek);
    expect(e(nonce)).toBe(V1.nonce);
  });

  it("§3.1: one record, rs 4096, empty key id: the published body exactly", () => {
    const body = eceEncrypt(utf8Encode(V1.plaintext), { ikm: d(V1.ikm), salt: d(V1.salt), recordSize: 4096 });
    expect(e(body)).toBe(V1.body);
    expect(new TextDecoder().decode(eceDecrypt(body, d(V1.ikm)))).toBe(V1.plaintext);
  });

  it("§3.2: two records of rs 25 with key id 'a1' and padding decrypt to the plaintext", () => {
    const body = d(V2.body);
    const header = decodeHeader(body);
    expect(header.recordSize).toBe(25);
    expect(new TextDecoder().decode(header.keyId)).toBe(V2.keyid);
    expect(new TextDecoder().decode(eceDecrypt(body, d(V2.ikm)))).toBe(V2.plaintext);
  });

  it("multi-record bodies round-trip; every non-last record is exactly rs long", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.integer({ min: 18, max: 64 }), (plain, rs) => {
        const ikm = new Uint8Array(16).fill(7);
        const body = eceEncrypt(plain, { ikm, recordSize: rs, keyId: utf8Encode("k") });
        expect(eceDecrypt(body, ikm)).toEqual(plain);
        const records = body.length - 22;
        expect(records % rs === 0 || records % rs > 16).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it("a dropped final record is detected (the last record must be marked 0x02)", () => {
    const ikm = new Uint8Array(16).fill(1);
    const body = eceEncrypt(new Uint8Array(40), { ikm, recordSize: 20 });
    expectEceError(() => eceDecrypt(body.subarray(0, 21 + 20), ikm));
  });

  it("any flipped byte after the header fails to decrypt", () => {
    const body = d(V1.body);
    for (let i = 21; i < body.length; i++) {
      const bad = body.slice();
      bad[i] ^= 0x01;
      expectEceError(() => eceDecrypt(bad, d(V1.ikm)));
    }
  });

  it("fuzz: arbitrary bytes never decrypt and only ever throw EceError", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        expectEceError(() => eceDecrypt(bytes, d(V1.ikm)));
      }),
      { numRuns: 300 },
    );
  });
});
