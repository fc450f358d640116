import fc from "fast-check";
import { p256 } from "@noble/curves/nist.js";
import { describe, expect, it } from "vitest";
import vectors from "../../../fixtures/minca-code.vectors.json";
import { base64urlEncode, utf8Encode } from "../../../../shared/encoding";
import { DidKeyError, isP256DidKey, p256DidKey, p256FromDidKey } from "../../../../shared/minca/did-key";
import { es256Sign, es256Verify, newP256Key, p256KeyFromJwk, p256KeyToJwk } from "../../../../shared/minca/es256";

const N = p256.Point.Fn.ORDER;
const toBig = (b: Uint8Array) => BigInt("0x" + Buffer.from(b).toString("hex"));
const fromBig = (n: bigint) => Uint8Array.from(Buffer.from(n.toString(16).padStart(64, "0"), "hex"));

/** The other valid signature of the same message: s replaced by n - s. */
function flipS(sig: Uint8Array): Uint8Array {
  const out = new Uint8Array(64);
  out.set(sig.subarray(0, 32));
  out.set(fromBig(N - toBig(sig.subarray(32))), 32);
  return out;
}

describe("did:key for P-256 (multicodec 0x1200, compressed point, base58btc)", () => {
  it("decodes the Minca protocol's dids, and encodes them back", () => {
    for (const did of vectors.dids) {
      expect(did.startsWith("did:key:zDn")).toBe(true);
      const point = p256FromDidKey(did);
      expect(point.length).toBe(33);
      expect(p256DidKey(point)).toBe(did);
    }
  });

  it("names a WebCrypto key the same from its compressed and uncompressed forms", async () => {
    const key = await newP256Key();
    const raw = new Uint8Array(await crypto.subtle.exportKey("raw", key.publicKey));
    expect(p256DidKey(raw)).toBe(key.did);
    expect(p256DidKey(p256FromDidKey(key.did))).toBe(key.did);
  });

  it("fuzz: decoding refuses every malformed did with DidKeyError", () => {
    const did = vectors.dids[0];
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), fc.nat(did.length - 1), fc.string({ minLength: 1, maxLength: 2 }), (s, at, ins) => {
        for (const candidate of [s, "did:key:z" + s, did.slice(0, at) + ins + did.slice(at + 1)]) {
          try {
            p256FromDidKey(candidate);
            expect(isP256DidKey(candidate)).toBe(true);
          } catch (e) {
            expect(e).toBeInstanceOf(DidKeyError);
            expect(isP256DidKey(candidate)).toBe(false);
          }
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe("ES256 over WebCrypto (docs/hostile.md)", () => {
  it("verifies r‖s signatures, high-S ones too, and nothing else", async () => {
    const key = await newP256Key();
    const msg = utf8Encode("minca");
    const sig = await es256Sign(key, msg);
    expect(sig.length).toBe(64);
    expect(await es256Verify(key.did, sig, msg)).toBe(true);
    expect(await es256Verify(key.did, base64urlEncode(flipS(sig)), msg)).toBe(true);
    expect(await es256Verify(key.did, sig, utf8Encode("other"))).toBe(false);
    expect(await es256Verify(vectors.dids[0], sig, msg)).toBe(false);
    expect(await es256Verify(key.did, "not base64url!", msg)).toBe(false);
    expect(await es256Verify("did:key:nope", sig, msg)).toBe(false);
  });

  it("a key saved as a JWK is the same key when loaded again", async () => {
    const key = await newP256Key(true);
    const again = await p256KeyFromJwk(await p256KeyToJwk(key));
    expect(again.did).toBe(key.did);
    expect(await es256Verify(key.did, await es256Sign(again, utf8Encode("x")), utf8Encode("x"))).toBe(true);
  });
});
