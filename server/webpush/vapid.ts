// RFC 8292 VAPID: the application server proves itself to a push service with an ES256 JWT
// (aud = the push service's origin, exp at most 12 h ahead, sub a mailto: or https: URL) and its
// public key, in `Authorization: vapid t=<jwt>, k=<key>`. Tokens are cached per origin.
import { p256 } from "@noble/curves/nist.js";
import * as z from "zod";
import { base64urlDecode, base64urlEncode, EncodingError, utf8Decode, utf8Encode } from "../../shared/encoding";
import { WEBPUSH_LIMITS } from "../../shared/limits";
import { p256SecretFrom } from "../p256-secret";

export class VapidError extends Error {}

export interface VapidKeys {
  /** 32-byte P-256 private scalar. */
  privateKey: Uint8Array;
  /** 65-byte uncompressed public key: the applicationServerKey browsers subscribe with. */
  publicKey: Uint8Array;
}

/** `sub`: a mailto: or https: URL the push service can reach the operator at. */
export const vapidSubjectSchema = z
  .string()
  .max(1024)
  .refine((s) => /^mailto:[^\s]+@[^\s]+$/.test(s) || /^https:\/\/[^\s]+$/.test(s), "sub must be a mailto: or https: URL");

/** VAPID `sub` when neither VAPID_SUBJECT nor an https PUBLIC_URL is set (fine locally only). */
export const DEFAULT_VAPID_SUBJECT = "mailto:relay@localhost";

/**
 * The VAPID `sub` the relay signs with (RFC 8292 §2.1: a contact URL): the operator's
 * VAPID_SUBJECT when it is a mailto: or https: URL; else the origin of the first https: URL of
 * the relay's public URLs (PUBLIC_URL as server/public-url.ts reads it), the relay's own address;
 * else the local default.
 */
export function vapidSubjectFor(subject: string, publicUrls: readonly URL[]): string {
  const set = subject.trim();
  if (set && vapidSubjectSchema.safeParse(set).success) return set;
  return publicUrls.find((u) => u.protocol === "https:")?.origin ?? DEFAULT_VAPID_SUBJECT;
}

export function generateVapidKeys(): VapidKeys {
  const privateKey = p256.utils.randomSecretKey();
  return { privateKey, publicKey: p256.getPublicKey(privateKey, false) };
}

/** Keys from the base64url private key (32 bytes), as kept in a secret. */
export function vapidKeysFromPrivate(privateKeyB64url: string): VapidKeys {
  const privateKey = p256SecretFrom(privateKeyB64url, "VAPID private key", (m) => new VapidError(m));
  return { privateKey, publicKey: p256.getPublicKey(privateKey, false) };
}

export interface VapidClaims {
  aud: string;
  exp: number;
  sub: string;
}

const JWT_HEADER = base64urlEncode(utf8Encode(JSON.stringify({ typ: "JWT", alg: "ES256" })));

/** An ES256 JWT over the claims, its signature the 64-byte r‖s form. */
export function signVapidJwt(claims: VapidClaims, keys: VapidKeys): string {
  const body = `${JWT_HEADER}.${base64urlEncode(utf8Encode(JSON.stringify(claims)))}`;
  const sig = p256.sign(utf8Encode(body), keys.privateKey, { prehash: true });
  return `${body}.${base64urlEncode(sig)}`;
}

export function vapidAuthorization(jwt: string, publicKey: Uint8Array): string {
  return `vapid t=${jwt}, k=${base64urlEncode(publicKey)}`;
}

/** The origin a push endpoint's JWT is for (RFC 8292 §2: aud). */
export function audienceOf(endpoint: string): string {
  return new URL(endpoint).origin;
}

/** Issues VAPID Authorization headers, one JWT per push-service origin while it has time left. */
export class VapidSigner {
  private readonly cache = new Map<string, { header: string; exp: number }>();

  constructor(
    private readonly keys: VapidKeys,
    private readonly subject: string,
    private readonly now: () => number = Date.now,
  ) {
    if (!vapidSubjectSchema.safeParse(subject).success) throw new VapidError("VAPID subject must be a mailto: or https: URL");
  }

  get publicKey(): Uint8Array {
    return this.keys.publicKey;
  }

  /** The Authorization header value for a push endpoint. */
  authorization(endpoint: string): string {
    const aud = audienceOf(endpoint);
    const nowS = Math.floor(this.now() / 1000);
    const hit = this.cache.get(aud);
    if (hit && hit.exp - nowS >= WEBPUSH_LIMITS.vapid_min_remaining_seconds) return hit.header;
    const exp = nowS + WEBPUSH_LIMITS.vapid_exp_seconds;
    const header = vapidAuthorization(signVapidJwt({ aud, exp, sub: this.subject }, this.keys), this.keys.publicKey);
    if (this.cache.size >= 256) this.cache.clear(); // origins are few (the browsers' push services)
    this.cache.set(aud, { header, exp });
    return header;
  }
}

const claimsSchema = z.object({ aud: z.string(), exp: z.number().int(), sub: z.string().optional() }).loose();

/**
 * The push service's side (RFC 8292 §2, §3): parses `vapid t=…, k=…`, checks the header, the
 * ES256 signature (high-S accepted) under k, the audience, and that exp is in the future and at
 * most 24 h ahead of `nowSeconds`. Returns the claims and the key; throws VapidError otherwise.
 */
export function verifyVapid(
  authorization: string,
  opts: { audience: string; nowSeconds: number },
): { claims: VapidClaims; publicKey: Uint8Array } {
  const m = /^vapid\s+(.*)$/i.exec(authorization.trim());
  if (!m) throw new VapidError("not a vapid Authorization");
  const params = new Map<string, string>();
  for (const part of m[1].split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) throw new VapidError("malformed vapid parameter");
    params.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  const t = params.get("t");
  const k = params.get("k");
  if (!t || !k) throw new VapidError("vapid needs t and k");
  let publicKey: Uint8Array;
  let header: unknown;
  let claims: unknown;
  let sig: Uint8Array;
  const parts = t.split(".");
  if (parts.length !== 3) throw new VapidError("t is not a JWT");
  try {
    publicKey = base64urlDecode(k);
    header = JSON.parse(utf8Decode(base64urlDecode(parts[0])));
    claims = JSON.parse(utf8Decode(base64urlDecode(parts[1])));
    sig = base64urlDecode(parts[2]);
  } catch (e) {
    if (e instanceof EncodingError || e instanceof SyntaxError) throw new VapidError("t or k is malformed");
    throw e;
  }
  if (typeof header !== "object" || header === null || (header as { alg?: unknown }).alg !== "ES256") {
    throw new VapidError("JWT alg must be ES256");
  }
  if (sig.length !== 64) throw new VapidError("signature must be 64 bytes r‖s");
  let ok = false;
  try {
    ok = p256.verify(sig, utf8Encode(`${parts[0]}.${parts[1]}`), publicKey, { prehash: true, lowS: false });
  } catch {
    ok = false;
  }
  if (!ok) throw new VapidError("signature does not verify under k");
  const c = claimsSchema.safeParse(claims);
  if (!c.success) throw new VapidError("claims need aud and an integer exp");
  if (c.data.aud !== opts.audience) throw new VapidError("aud is not this push service");
  if (c.data.exp <= opts.nowSeconds) throw new VapidError("JWT expired");
  if (c.data.exp > opts.nowSeconds + 86_400) throw new VapidError("exp more than 24 h ahead");
  return { claims: { aud: c.data.aud, exp: c.data.exp, sub: c.data.sub ?? "" }, publicKey };
}
