import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { p256 } from "@noble/curves/nist.js";
import webpush from "web-push";
import vectors from "../../../fixtures/webpush.vectors.json";
import {
  VapidError,
  VapidSigner,
  generateVapidKeys,
  signVapidJwt,
  vapidKeysFromPrivate,
  verifyVapid,
} from "../../../../server/webpush/vapid";
import { base64urlDecode, base64urlEncode, utf8Encode } from "../../../../shared/encoding";
import { nodeVerifyVapid } from "../../../helpers/webpush-node";

const V = vectors.rfc8292_2_4;

function expectVapidError(fn: () => unknown): void {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(VapidError);
    return;
  }
  throw new Error("expected a VapidError, nothing was thrown");
}

describe("RFC 8292 VAPID", () => {
  it("§2.4: the published token and key verify, with the published claims", () => {
    const got = verifyVapid(`vapid t=${V.t}, k=${V.k}`, { audience: V.claims.aud, nowSeconds: V.claims.exp - 3600 });
    expect(got.claims).toEqual(V.claims);
    expect(base64urlEncode(got.publicKey)).toBe(V.k);
  });

  it("§2.4 token: expired, for another audience, or with a changed claim, it is refused", () => {
    expectVapidError(() => verifyVapid(`vapid t=${V.t}, k=${V.k}`, { audience: V.claims.aud, nowSeconds: V.claims.exp }));
    expectVapidError(() => verifyVapid(`vapid t=${V.t}, k=${V.k}`, { audience: "https://other.example", nowSeconds: V.claims.exp - 10 }));
    const [h, , s] = V.t.split(".");
    const forged = base64urlEncode(utf8Encode(JSON.stringify({ ...V.claims, sub: "mailto:evil@example.com" })));
    expectVapidError(() => verifyVapid(`vapid t=${h}.${forged}.${s}, k=${V.k}`, { audience: V.claims.aud, nowSeconds: V.claims.exp - 10 }));
  });

  it("our JWT verifies under an independent ES256 verifier (Node crypto), exp at most 12 h ahead", () => {
    const keys = generateVapidKeys();
    // The signer reads the test's clock: a second boundary crossed while signing must not move exp.
    const nowMs = Date.now();
    const now = Math.floor(nowMs / 1000);
    const signer = new VapidSigner(keys, "mailto:ops@example.com", () => nowMs);
    const header = signer.authorization("https://fcm.googleapis.com/fcm/send/abc");
    const got = nodeVerifyVapid(header, "https://fcm.googleapis.com");
    expect(got.claims.sub).toBe("mailto:ops@example.com");
    expect(got.claims.exp - now).toBeLessThanOrEqual(12 * 3600);
    expect(got.claims.exp - now).toBeGreaterThan(11 * 3600);
    expect(got.publicKey).toBe(base64urlEncode(keys.publicKey));
  });

  it("high-S signatures are accepted (docs/hostile.md)", () => {
    const keys = generateVapidKeys();
    const claims = { aud: "https://push.example", exp: 2_000_000_000, sub: "https://relay.example" };
    const jwt = signVapidJwt(claims, keys);
    const [h, p, s] = jwt.split(".");
    const sig = p256.Signature.fromBytes(base64urlDecode(s), "compact");
    const high = new p256.Signature(sig.r, p256.Point.CURVE().n - sig.s).toBytes("compact");
    const t = `${h}.${p}.${base64urlEncode(high)}`;
    expect(
      verifyVapid(`vapid t=${t}, k=${base64urlEncode(keys.publicKey)}`, { audience: claims.aud, nowSeconds: 1_999_990_000 }).claims,
    ).toEqual(claims);
  });

  it("one JWT per push-service origin, reused while an hour is left, then re-signed", () => {
    let now = 1_800_000_000_000;
    const signer = new VapidSigner(generateVapidKeys(), "mailto:a@b.example", () => now);
    const a1 = signer.authorization("https://push.a.example/one");
    expect(signer.authorization("https://push.a.example/two")).toBe(a1);
    expect(signer.authorization("https://push.b.example/one")).not.toBe(a1);
    now += 10 * 3600 * 1000;
    expect(signer.authorization("https://push.a.example/three")).toBe(a1);
    now += 1 * 3600 * 1000 + 1000;
    expect(signer.authorization("https://push.a.example/three")).not.toBe(a1);
  });

  it("sub must be a mailto: or https: URL", () => {
    const keys = generateVapidKeys();
    expectVapidError(() => new VapidSigner(keys, "ops@example.com"));
    expectVapidError(() => new VapidSigner(keys, "http://example.com"));
    expect(() => new VapidSigner(keys, "https://example.com")).not.toThrow();
  });

  it("keys kept as web-push generates them (base64url, 32-byte private key) load, and give the same public key", () => {
    const wp = webpush.generateVAPIDKeys();
    expect(base64urlEncode(vapidKeysFromPrivate(wp.privateKey).publicKey)).toBe(wp.publicKey);
    expectVapidError(() => vapidKeysFromPrivate("not a key"));
    expectVapidError(() => vapidKeysFromPrivate(base64urlEncode(new Uint8Array(32))));
  });

  it("a header web-push makes for our key verifies here (the two agree on the format)", () => {
    const wp = webpush.generateVAPIDKeys();
    const headers = webpush.getVapidHeaders("https://push.example", "mailto:x@y.example", wp.publicKey, wp.privateKey, "aes128gcm");
    const got = verifyVapid(headers.Authorization, { audience: "https://push.example", nowSeconds: Math.floor(Date.now() / 1000) });
    expect(got.claims.sub).toBe("mailto:x@y.example");
  });

  it("fuzz: arbitrary Authorization values only ever throw VapidError", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), fc.string({ maxLength: 60 }), (t, k) => {
        expectVapidError(() => verifyVapid(`vapid t=${t}, k=${k}`, { audience: "https://p.example", nowSeconds: 0 }));
        expectVapidError(() => verifyVapid(t, { audience: "https://p.example", nowSeconds: 0 }));
      }),
      { numRuns: 300 },
    );
  });
});

describe("RFC 8292 §2.1: the VAPID sub is a contact for the relay's operator", () => {
  it("the operator's VAPID_SUBJECT, else the relay's https PUBLIC_URL, never the placeholder on a public relay", async () => {
    const { vapidSubjectFor, DEFAULT_VAPID_SUBJECT } = await import("../../../../server/webpush/vapid");
    const { parsePublicUrl } = await import("../../../../server/public-url");
    const urls = (s: string) => parsePublicUrl(s).urls;
    expect(vapidSubjectFor("mailto:ops@relay.example", urls("https://relay.example"))).toBe("mailto:ops@relay.example");
    expect(vapidSubjectFor("", urls("http://10.0.0.1:8787, https://relay.example/base"))).toBe("https://relay.example");
    expect(vapidSubjectFor("not a contact", urls("https://relay.example"))).toBe("https://relay.example");
    expect(vapidSubjectFor("", urls(""))).toBe(DEFAULT_VAPID_SUBJECT);
  });
});
