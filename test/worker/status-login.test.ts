// The protected status page in a browser: with ADMIN_TOKEN set, a browser asking for HTML gets a
// login form instead of 401 JSON; the right token sets an HttpOnly, SameSite=Strict session cookie
// (Secure over https) that opens the pages; wrong tokens are throttled per client address.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { app } from "../../workers/app";
import { ADMIN_LIMITS } from "../../shared/limits";
import { ownAddress } from "../helpers/client-address";

const TOKEN = "operator-token-1";
const settings = { ...env, ADMIN_TOKEN: TOKEN };
/** A fresh client address per test: the throttle counts per address. */
const nextClient = ownAddress;

async function get(path: string, headers: Record<string, string>, base = "http://relay.test"): Promise<Response> {
  return app.fetch(new Request(`${base}${path}`, { headers }), settings);
}

async function login(token: string, client: string, base = "http://relay.test"): Promise<Response> {
  const body = new URLSearchParams({ token, next: "/status" });
  return app.fetch(
    new Request(`${base}/status/login`, {
      method: "POST",
      body,
      headers: { "cf-connecting-ip": client, "content-type": "application/x-www-form-urlencoded" },
    }),
    settings,
  );
}

describe("status page login", () => {
  it("a browser (Accept: text/html) gets a login form posting to /status/login, not 401 JSON; programs still get 401 JSON", async () => {
    const client = nextClient();
    const page = await get("/status", { accept: "text/html,application/xhtml+xml", "cf-connecting-ip": client });
    expect(page.status).toBe(401);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toContain('<form method="post" action="/status/login">');
    expect(html).toContain('type="password" name="token"');
    const program = await get("/status", { "cf-connecting-ip": client });
    expect(((await program.json()) as any).error.code).toBe("auth_failed");
  });

  it("the right token sets an HttpOnly, SameSite=Strict cookie (Secure over https) that opens /status, /status.json and /metrics", async () => {
    const client = nextClient();
    const res = await login(TOKEN, client, "https://relay.test");
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/status");
    const cookie = res.headers.get("set-cookie")!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Secure/);
    expect(cookie).not.toContain(TOKEN);
    const pair = cookie.split(";")[0];
    for (const path of ["/status", "/status.json", "/metrics"]) {
      expect((await get(path, { cookie: pair, "cf-connecting-ip": client }, "https://relay.test")).status, path).toBe(200);
    }
    const plain = await login(TOKEN, nextClient());
    expect(plain.headers.get("set-cookie")).not.toMatch(/Secure/);
    expect((await get("/status", { cookie: "relay_status=4102444800." + "0".repeat(64) })).status).toBe(401);
  });

  it("wrong tokens are throttled per client address: past admin.auth_failures_per_window, wrong ones wait (429, Retry-After); the right one is checked first and let in", async () => {
    const client = nextClient();
    for (let i = 0; i < ADMIN_LIMITS.auth_failures_per_window; i++) expect((await login("wrong", client)).status).toBe(401);
    const held = await login("wrong again", client);
    expect(held.status).toBe(429);
    expect(Number(held.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await get("/status.json", { authorization: "Bearer guess", "cf-connecting-ip": client })).status).toBe(429);
    expect((await get("/status.json", { authorization: `Bearer ${TOKEN}`, "cf-connecting-ip": client })).status).toBe(200);
    expect((await login(TOKEN, client)).status).toBe(303);
    expect((await login(TOKEN, nextClient())).status).toBe(303);
  });

  it("a page seen through the session cookie has a Log out button; POST /status/logout clears the cookie and leads back to the login form", async () => {
    const client = nextClient();
    const pair = (await login(TOKEN, client)).headers.get("set-cookie")!.split(";")[0];
    const page = await (await get("/status", { cookie: pair, "cf-connecting-ip": client })).text();
    expect(page).toContain('<form method="post" action="/status/logout"');
    expect(page).toContain('data-testid="logout"');
    const bearer = await (await get("/status", { authorization: `Bearer ${TOKEN}`, "cf-connecting-ip": client })).text();
    expect(bearer).not.toContain("/status/logout");
    const out = await app.fetch(new Request("http://relay.test/status/logout", { method: "POST", headers: { cookie: pair } }), settings);
    expect(out.status).toBe(303);
    expect(out.headers.get("location")).toBe("/status");
    expect(out.headers.get("set-cookie")).toMatch(/^relay_status=;.*Max-Age=0/);
    expect((await app.fetch(new Request("http://relay.test/status/logout"), settings)).status).toBe(405);
  });

  it("the open page's banner names where to set ADMIN_TOKEN: the environment of npm start self-hosted, the Worker secret on Cloudflare", async () => {
    const open = { ...env, ADMIN_TOKEN: "", RELAY_LOOPBACK_ONLY: "true" };
    const selfHosted = await (await app.fetch(new Request("http://relay.test/status"), { ...open, RELAY_RUNTIME: "workerd" })).text();
    expect(selfHosted).toContain('data-testid="open-banner"');
    expect(selfHosted).toContain("in the environment of <code>npm start</code>");
    expect(selfHosted).not.toContain("Worker secret");
    const cloudflare = await (await app.fetch(new Request("http://relay.test/status"), open)).text();
    expect(cloudflare).toContain("the Worker secret <code>ADMIN_TOKEN</code>");
  });
});
