// The operator is never locked out (docs/hostile.md, "The operator's pages"): a valid token,
// session or NIP-98 signature is checked before the throttle of wrong credentials, which only ever
// holds back wrong ones. In shared mode (no trusted client address) every client is one, and five
// wrong tokens from anyone used to get the operator's right token, NIP-98 calls and /status.json
// answered 429 for a minute.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { schnorr } from "@noble/curves/secp256k1.js";
import { ADMIN_LIMITS } from "../../shared/limits";
import { bytesToHex, utf8Encode } from "../../shared/encoding";
import { nip98Header } from "../../server/nostr/nip98";
import { app } from "../../workers/app";

const TOKEN = "the-operators-token";
const adminKey = schnorr.utils.randomSecretKey();
// No cf-connecting-ip: every request is the shared client, as on a relay without a trusted header.
const settings = {
  ADMIN_TOKEN: TOKEN,
  ADMIN_PUBKEYS: bytesToHex(schnorr.getPublicKey(adminKey)),
  PUBLIC_URL: "http://relay.test",
  RELAY_LOOPBACK_ONLY: undefined,
};
const send = (path: string, init: RequestInit = {}) => app.fetch(new Request(`http://relay.test${path}`, init), { ...env, ...settings });

async function rpc(authorization: (url: string, body: Uint8Array) => string): Promise<Response> {
  const text = JSON.stringify({ method: "supportedmethods", params: [] });
  return send("/", {
    method: "POST",
    body: text,
    headers: { "content-type": "application/nostr+json+rpc", authorization: authorization("http://relay.test/", utf8Encode(text)) },
  });
}

describe("the operator is never locked out in shared mode", () => {
  it("after wrong tokens from anyone, the right token, a valid NIP-98 signature and the status pages with the token are served; wrong ones get 429", async () => {
    for (let i = 0; i < ADMIN_LIMITS.auth_failures_per_window + 1; i++)
      await send("/status.json", { headers: { authorization: "Bearer guess" } });
    expect((await send("/status.json", { headers: { authorization: "Bearer guess" } })).status).toBe(429);
    expect((await rpc(() => "Bearer guess")).status).toBe(429);
    // the operator's own credentials
    expect((await send("/status.json", { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    expect((await rpc(() => `Bearer ${TOKEN}`)).status).toBe(200);
    expect((await rpc((url, body) => nip98Header(adminKey, url, "POST", body))).status).toBe(200);
    const login = await send("/status/login", {
      method: "POST",
      body: new URLSearchParams({ token: TOKEN }),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(login.status).toBe(303);
  });
});
