// Web Push against an attacker (docs/hostile.md, "Web Push"), inside workerd: a relay reached
// under a Host it does not know (no PUBLIC_URL, a spoofed Host header) still refuses an endpoint
// that is one of its own routes, and the relay's real gates hold many subdomains of one domain,
// and many domains together, to their rates.
import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { p256 } from "@noble/curves/nist.js";
import { app } from "../../workers/app";
import { admitPushes } from "../../durable-objects/push/push-gate";
import { WEBPUSH_LIMITS } from "../../shared/limits";
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

describe("docs/hostile.md: the relay's push gates", () => {
  const fresh = () => `r${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;

  it("many subdomains of one domain share one gate: 3 subdomains × 100 pushes get the origin burst, the rest wait", async () => {
    const domain = `${fresh()}.example`;
    const items = [0, 1, 2].flatMap((s) => Array.from({ length: 100 }, (_, i) => `https://s${s}.${domain}/push/${i}`));
    const started = Date.now();
    // The domain's gate is new: a full bucket, taken from at one instant.
    const { go, wait } = await admitPushes(env, items, (e) => e, 5_000);
    expect(go.length).toBeLessThanOrEqual(WEBPUSH_LIMITS.origin_push_burst);
    expect(go.length + wait.length).toBe(300);
    expect(wait.every((w) => w.at > started)).toBe(true);
  });

  it("a relay-wide budget: pushes to many fresh domains together get at most relay_push_burst at once", async () => {
    const domains = Math.ceil((1.2 * WEBPUSH_LIMITS.relay_push_burst) / WEBPUSH_LIMITS.origin_push_burst);
    const items = Array.from({ length: domains }, () => fresh()).flatMap((d) =>
      Array.from({ length: WEBPUSH_LIMITS.origin_push_burst }, (_, i) => `https://push.${d}.example/${i}`),
    );
    // The relay's gate holds at most its burst, taken from at one instant.
    const { go, wait } = await admitPushes(env, items, (e) => e, 5_000);
    expect(go.length).toBeLessThanOrEqual(WEBPUSH_LIMITS.relay_push_burst);
    expect(go.length).toBeLessThan(items.length);
    expect(go.length + wait.length).toBe(items.length);
  });
});
