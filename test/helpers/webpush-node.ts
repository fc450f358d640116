// An independent Web Push user agent and push-service check, written against RFC 8291/8188/8292
// with Node's own crypto (OpenSSL), sharing no code with shared/webpush: what the relay sends is
// judged by something it did not write.
import { createDecipheriv, createECDH, createHmac, createPublicKey, randomBytes, verify, type ECDH } from "node:crypto";

export interface NodeSubscription {
  endpoint: string;
  keys: { p256dh: string; auth: string };
  ecdh: ECDH;
  authSecret: Buffer;
}

const b64u = (b: Buffer) => b.toString("base64url");

/** A fresh subscription key pair and auth secret, as a browser makes one. */
export function nodeSubscription(endpoint: string): NodeSubscription {
  const ecdh = createECDH("prime256v1");
  ecdh.generateKeys();
  const authSecret = randomBytes(16);
  return { endpoint, keys: { p256dh: b64u(ecdh.getPublicKey()), auth: b64u(authSecret) }, ecdh, authSecret };
}

function hmac(key: Buffer, data: Buffer): Buffer {
  return createHmac("sha256", key).update(data).digest();
}

/** HKDF with one output block (enough for every length used here). */
function hkdf(salt: Buffer, ikm: Buffer, info: Buffer, len: number): Buffer {
  const prk = hmac(salt, ikm);
  return hmac(prk, Buffer.concat([info, Buffer.from([1])])).subarray(0, len);
}

/** RFC 8291 §3-4 and RFC 8188 §2, one record: the plaintext of a push message body. */
export function nodeDecrypt(body: Buffer, sub: { ecdh: ECDH; authSecret: Buffer }): Buffer {
  const salt = body.subarray(0, 16);
  const rs = body.readUInt32BE(16);
  const idlen = body[20];
  const asPublic = body.subarray(21, 21 + idlen);
  const record = body.subarray(21 + idlen);
  if (idlen !== 65) throw new Error("keyid is not a P-256 public key");
  if (record.length > rs) throw new Error("more than one record");
  const uaPublic = sub.ecdh.getPublicKey();
  const secret = sub.ecdh.computeSecret(asPublic);
  const ikm = hkdf(sub.authSecret, secret, Buffer.concat([Buffer.from("WebPush: info\0"), uaPublic, asPublic]), 32);
  const cek = hkdf(salt, ikm, Buffer.from("Content-Encoding: aes128gcm\0"), 16);
  const nonce = hkdf(salt, ikm, Buffer.from("Content-Encoding: nonce\0"), 12);
  const d = createDecipheriv("aes-128-gcm", cek, nonce);
  d.setAuthTag(record.subarray(record.length - 16));
  const padded = Buffer.concat([d.update(record.subarray(0, record.length - 16)), d.final()]);
  let i = padded.length - 1;
  while (i >= 0 && padded[i] === 0) i--;
  if (padded[i] !== 2) throw new Error("the single record is not marked last");
  return padded.subarray(0, i);
}

export interface VapidCheck {
  claims: { aud: string; exp: number; sub?: string };
  publicKey: string;
}

/** RFC 8292 §2-3 as a push service checks it: `vapid t=<ES256 JWT>, k=<P-256 key>`. */
export function nodeVerifyVapid(authorization: string, audience: string, nowSeconds = Math.floor(Date.now() / 1000)): VapidCheck {
  const m = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(authorization);
  if (!m) throw new Error(`not a vapid header: ${authorization}`);
  const [t, k] = [m[1], m[2]];
  const [h, p, s] = t.split(".");
  const header = JSON.parse(Buffer.from(h, "base64url").toString("utf8"));
  if (header.alg !== "ES256") throw new Error("alg is not ES256");
  const raw = Buffer.from(k, "base64url");
  if (raw.length !== 65 || raw[0] !== 4) throw new Error("k is not an uncompressed P-256 key");
  const key = createPublicKey({
    key: { kty: "EC", crv: "P-256", x: b64u(raw.subarray(1, 33)), y: b64u(raw.subarray(33)) },
    format: "jwk",
  });
  const ok = verify("sha256", Buffer.from(`${h}.${p}`), { key, dsaEncoding: "ieee-p1363" }, Buffer.from(s, "base64url"));
  if (!ok) throw new Error("JWT signature does not verify");
  const claims = JSON.parse(Buffer.from(p, "base64url").toString("utf8"));
  if (claims.aud !== audience) throw new Error(`aud ${claims.aud} is not ${audience}`);
  if (!(claims.exp > nowSeconds && claims.exp <= nowSeconds + 12 * 3600 + 60)) throw new Error("exp not within 12 h");
  if (!/^(mailto:|https:)/.test(claims.sub ?? "")) throw new Error("sub is not mailto: or https:");
  return { claims, publicKey: k };
}
