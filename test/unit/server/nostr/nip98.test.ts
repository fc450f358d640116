// NIP-98 HTTP Auth as the admin API checks it: kind 27235, u = the request URL, method, payload =
// SHA-256 of the body, within the skew bound, a valid BIP-340 signature; anything else refused,
// never thrown.
import { schnorr } from "@noble/curves/secp256k1.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bytesToHex, utf8Encode } from "../../../../shared/encoding";
import { checkNip98, nip98Header } from "../../../../server/nostr/nip98";

const sk = schnorr.utils.randomSecretKey();
const pub = bytesToHex(schnorr.getPublicKey(sk));
const url = "http://relay.test/";
const body = utf8Encode('{"method":"supportedmethods","params":[]}');
const now = 1_800_000_000;
const req = { url, method: "POST", body, hosts: ["relay.test"], nowSeconds: now, maxSkewSeconds: 60 };

describe("NIP-98", () => {
  it("accepts a signed kind-27235 event for this URL, method and body, and names its key", () => {
    expect(checkNip98(nip98Header(sk, url, "POST", body, now), req)).toMatchObject({ ok: true, pubkey: pub, createdAt: now });
  });

  it("refuses another URL, method or body, an old event, and a broken signature", () => {
    expect(checkNip98(nip98Header(sk, "http://relay.test/other", "POST", body, now), req).ok).toBe(false);
    expect(checkNip98(nip98Header(sk, url, "GET", body, now), req).ok).toBe(false);
    expect(checkNip98(nip98Header(sk, url, "POST", utf8Encode("{}"), now), req).ok).toBe(false);
    expect(checkNip98(nip98Header(sk, url, "POST", body, now - 61), req)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/within 60 s/),
    });
    const h = nip98Header(sk, url, "POST", body, now);
    const tampered = h.slice(0, -8) + (h.endsWith("AAAAAAAA") ? "BBBBBBBB" : "AAAAAAAA");
    expect(checkNip98(tampered, req).ok).toBe(false);
  });

  it("the URL must carry the relay's public host (PUBLIC_URL), with the same path; the request's own Host does not count", () => {
    const header = nip98Header(sk, "https://relay.example/", "POST", body, now);
    expect(checkNip98(header, req).ok).toBe(false);
    expect(checkNip98(header, { ...req, hosts: ["relay.example"] }).ok).toBe(true);
    // an event signed for another relay, sent with that relay's name as Host: refused
    const other = nip98Header(sk, "https://other.example/", "POST", body, now);
    expect(checkNip98(other, { ...req, url: "https://other.example/", hosts: ["relay.example"] }).ok).toBe(false);
    expect(checkNip98(nip98Header(sk, url, "POST", body, now), { ...req, hosts: [] }).ok).toBe(false);
  });

  it("fuzz: any header is refused or accepted without throwing", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.base64String().map((s) => `Nostr ${s}`),
          fc.json().map((j) => `Nostr ${btoa(j)}`),
        ),
        (h) => {
          const r = checkNip98(h, req);
          expect(typeof r.ok).toBe("boolean");
        },
      ),
    );
  });
});
