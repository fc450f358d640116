import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import webpush from "web-push";
import vectors from "../../../fixtures/webpush.vectors.json";
import { decryptPushMessage, encryptPushMessage, pushIkm } from "../../../../shared/webpush/encrypt";
import { EceError } from "../../../../shared/webpush/ece";
import { subscriptionKeys } from "../../../../shared/webpush/subscription";
import { base64urlDecode as d, base64urlEncode as e, utf8Encode } from "../../../../shared/encoding";
import { nodeDecrypt, nodeSubscription } from "../../../helpers/webpush-node";

const A = vectors.rfc8291_appendix_a;
// http_ece is web-push's own decrypter (Martin Thomson's reference implementation of RFC 8188).
const ece = createRequire(import.meta.url)("http_ece") as {
  decrypt(buf: Buffer, params: { version: string; privateKey: unknown; dh?: string; authSecret: string }): Buffer;
};

describe("RFC 8291 message encryption", () => {
  it("Appendix A: the key schedule gives the published IKM", () => {
    expect(e(pushIkm(d(A.ecdh_secret), d(A.auth_secret), d(A.ua_public), d(A.as_public)))).toBe(A.ikm);
  });

  it("Appendix A: with the published sender key and salt, the body is the published one", () => {
    const body = encryptPushMessage(
      d(A.plaintext),
      { p256dh: d(A.ua_public), auth: d(A.auth_secret) },
      {
        senderPrivateKey: d(A.as_private),
        salt: d(A.salt),
      },
    );
    expect(e(body)).toBe(A.body);
    expect(body.length).toBe(144);
  });

  it("Appendix A: the user agent opens the published body", () => {
    expect(e(decryptPushMessage(d(A.body), d(A.ua_private), d(A.auth_secret)))).toBe(A.plaintext);
  });

  it("a fresh sender key pair and salt per message: two encryptions of one payload differ", () => {
    const keys = { p256dh: d(A.ua_public), auth: d(A.auth_secret) };
    const a = encryptPushMessage(utf8Encode("same"), keys);
    const b = encryptPushMessage(utf8Encode("same"), keys);
    expect(e(a.subarray(0, 16))).not.toBe(e(b.subarray(0, 16)));
    expect(e(a.subarray(21, 86))).not.toBe(e(b.subarray(21, 86)));
  });

  it("independent decrypters (Node crypto, and web-push's http_ece) open what we encrypt", () => {
    const sub = nodeSubscription("https://push.example/x");
    const plain = utf8Encode(JSON.stringify({ topic: "t".repeat(16), seq: 1 }));
    const body = encryptPushMessage(plain, subscriptionKeys(sub));
    expect(nodeDecrypt(Buffer.from(body), sub)).toEqual(Buffer.from(plain));
    const opened = ece.decrypt(Buffer.from(body), {
      version: "aes128gcm",
      privateKey: sub.ecdh,
      authSecret: sub.keys.auth,
    });
    expect(opened).toEqual(Buffer.from(plain));
  });

  it("we open what the web-push package encrypts (aes128gcm)", () => {
    const sub = nodeSubscription("https://push.example/x");
    const out = webpush.encrypt(sub.keys.p256dh, sub.keys.auth, "hello from web-push", "aes128gcm");
    const plain = decryptPushMessage(new Uint8Array(out.cipherText), sub.ecdh.getPrivateKey(), sub.authSecret);
    expect(new TextDecoder().decode(plain)).toBe("hello from web-push");
  });

  it("the largest payload (3993 bytes) makes a body of exactly 4096 bytes, the push services' limit; one more is refused", () => {
    const keys = { p256dh: d(A.ua_public), auth: d(A.auth_secret) };
    expect(encryptPushMessage(new Uint8Array(3993), keys).length).toBe(4096);
    expect(() => encryptPushMessage(new Uint8Array(3994), keys)).toThrow(EceError);
  });

  it("a p256dh that is not a curve point is refused", () => {
    const bad = d(A.ua_public).slice();
    bad[64] ^= 1;
    expect(() => encryptPushMessage(utf8Encode("x"), { p256dh: bad, auth: d(A.auth_secret) })).toThrow(EceError);
  });

  it("fuzz: arbitrary push bodies never open and only ever throw EceError", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.boolean(), (bytes, withKeyId) => {
        let body = bytes;
        if (withKeyId && bytes.length > 0) {
          // a well-formed header with the real sender key, then garbage records
          const h = d(A.body).subarray(0, 86);
          body = new Uint8Array(h.length + bytes.length);
          body.set(h);
          body.set(bytes, h.length);
        }
        try {
          decryptPushMessage(body, d(A.ua_private), d(A.auth_secret));
          throw new Error("garbage decrypted");
        } catch (err) {
          expect(err).toBeInstanceOf(EceError);
        }
      }),
      { numRuns: 200 },
    );
  });
});
