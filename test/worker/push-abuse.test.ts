// Web Push against an attacker (docs/hostile.md, "Web Push"), inside workerd: a relay reached
// under a Host it does not know (no PUBLIC_URL, a spoofed Host header) still refuses an endpoint
// that is one of its own routes, and the relay's real gates hold many subdomains of one domain,
// and many domains together, to their rates.
import { SELF, env } from "cloudflare:test";
import { HostConnection, newAccount } from "../../clients/minca/host";
import { describe, expect, it } from "vitest";
import { p256 } from "@noble/curves/nist.js";
import { app } from "../../workers/app";
import { admitPushes } from "../../durable-objects/push/push-gate";
import { WEBPUSH_LIMITS } from "../../shared/limits";
import { base64urlEncode, randomBytes } from "../../shared/encoding";
import { isRelayPath, RELAY_PATH_ROOTS } from "../../server/webpush/endpoint";
import { ownAddress } from "../helpers/client-address";

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

describe("docs/hostile.md: how many push origins receivers may name", () => {
  const register = (topic: string, endpoint: string, address: string) =>
    SELF.fetch(`http://relay.test/minca/v1/mailbox/${topic}/receivers`, {
      method: "POST",
      headers: { "cf-connecting-ip": address },
      body: JSON.stringify({ endpoint, keys: keys() }),
    });
  const fresh = () => `o${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;

  it("max_push_origins_per_topic: a topic's receivers name at most 4 push origins; more endpoints at a held origin still fit", async () => {
    const topic = newTopic();
    const max = WEBPUSH_LIMITS.max_push_origins_per_topic;
    // Each registration from its own address, so the per-client bound stays out of the way.
    const domains = Array.from({ length: max }, () => `${fresh()}.example`);
    for (const d of domains) expect((await register(topic, `https://push.${d}/s/1`, ownAddress())).status).toBe(201);
    const over = await register(topic, `https://push.${fresh()}.example/s/1`, ownAddress());
    expect(over.status).toBe(409);
    expect(((await over.json()) as any).error.code).toBe("too_many_receivers");
    // Another subdomain of a held domain is the same push origin.
    expect((await register(topic, `https://other.${domains[0]}/s/2`, ownAddress())).status).toBe(201);
  });

  it("max_push_origins_per_client: one client registers receivers at no more than 8 push origins within the window, on any topics (429 with Retry-After)", async () => {
    const address = ownAddress();
    const max = WEBPUSH_LIMITS.max_push_origins_per_client;
    const held: string[] = [];
    for (let i = 0; i < max; i++) {
      held.push(`${fresh()}.example`);
      expect((await register(newTopic(), `https://push.${held[i]}/s/1`, address)).status).toBe(201);
    }
    const over = await register(newTopic(), `https://push.${fresh()}.example/s/1`, address);
    expect(over.status).toBe(429);
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
    // An origin it already holds still goes, and another client is not affected.
    expect((await register(newTopic(), `https://b.${held[0]}/s/2`, address)).status).toBe(201);
    expect((await register(newTopic(), `https://push.${fresh()}.example/s/1`, ownAddress())).status).toBe(201);
  });

  it("without a trusted client address (the shared client), the per-client bound does not apply: one attacker cannot lock everyone out", async () => {
    for (let i = 0; i <= WEBPUSH_LIMITS.max_push_origins_per_client; i++) {
      const res = await SELF.fetch(`http://relay.test/minca/v1/mailbox/${newTopic()}/receivers`, {
        method: "POST",
        body: JSON.stringify({ endpoint: `https://push.${fresh()}.example/s/1`, keys: keys() }),
      });
      expect(res.status).toBe(201);
    }
  });
});

describe("docs/hosting.md: a hosted account's receivers name at most max_push_origins_per_topic push origins", () => {
  it("a sys.receiver at a fifth push origin is refused (too_many_receivers); another device at a held origin is taken", async () => {
    const acct = await newAccount();
    const fetchSelf = ((input: RequestInfo | URL, init?: RequestInit) => SELF.fetch(input as string, init)) as typeof fetch;
    const host = new HostConnection(acct, "http://relay.test", { fetch: fetchSelf });
    await host.connect();
    const push = (domain: string) => ({ endpoint: `https://push.${domain}/s/${Math.random().toString(36).slice(2)}`, keys: keys() });
    const domains = Array.from({ length: WEBPUSH_LIMITS.max_push_origins_per_topic }, (_, i) => `h${i}${Date.now().toString(36)}.example`);
    for (const [i, d] of domains.entries()) expect(await host.receiver(`device${i}`, push(d))).toMatchObject({ accepted: true });
    expect(await host.receiver("extra", push(`h9${Date.now().toString(36)}.example`))).toMatchObject({
      accepted: false,
      reason: "too_many_receivers",
    });
    expect(await host.receiver("extra", push(domains[1]))).toMatchObject({ accepted: true });
    expect(await host.status()).toMatchObject({ receivers: WEBPUSH_LIMITS.max_push_origins_per_topic + 1 });
  });
});
