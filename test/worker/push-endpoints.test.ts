// The push-endpoint rule where receivers are registered (docs/hostile.md, "Web Push"): a relay
// reached under a Host it does not know (no PUBLIC_URL, a spoofed Host header) still refuses an
// endpoint that is one of its own routes, for a mailbox's receivers and for a hosted account's.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { p256 } from "@noble/curves/nist.js";
import { app } from "../../workers/app";
import { base64urlEncode, randomBytes } from "../../shared/encoding";
import { isRelayPath, RELAY_PATH_ROOTS } from "../../shared/webpush/endpoint";

let n = 0;
const newTopic = () => `push-endpoint-topic-${Date.now()}-${++n}`;
const keys = () => ({
  p256dh: base64urlEncode(p256.getPublicKey(p256.utils.randomSecretKey(), false)),
  auth: base64urlEncode(randomBytes(16)),
});

describe("docs/hostile.md: a push endpoint that is a relay path is refused on any host", () => {
  it("a receiver at the relay's own mailbox, registered with a spoofed Host, is refused (400 invalid_endpoint)", async () => {
    const victim = newTopic();
    // The relay answers as relay.test; the request names another host, so the host rule alone passes it.
    const res = await SELF.fetch(`https://spoofed.example/minca/v1/mailbox/${newTopic()}/receivers`, {
      method: "POST",
      headers: { host: "spoofed.example" },
      body: JSON.stringify({ endpoint: `https://relay.test/minca/v1/mailbox/${victim}`, keys: keys() }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("invalid_endpoint");
    expect(body.error.message).toMatch(/route of this relay/);
  });

  it("every route the relay serves starts with a segment the rule knows", () => {
    const paths = [...new Set(app.routes.map((r) => r.path))].filter((p) => p !== "/*" && p !== "*");
    expect(paths.length).toBeGreaterThan(10);
    for (const p of paths) expect(isRelayPath(p.replace(/:[^/]+(\{[^}]*\})?/g, "x")), p).toBe(true);
    expect(RELAY_PATH_ROOTS).toContain("minca");
  });
});
