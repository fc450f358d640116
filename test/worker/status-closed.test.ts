// The operator's pages without ADMIN_TOKEN: open only on a self-hosted relay that listens on
// loopback only (RELAY_LOOPBACK_ONLY, set by the generated workerd config), closed (401) on
// Cloudflare and beyond loopback; credentials sent to a closed page are throttled per address.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ADMIN_LIMITS } from "../../shared/limits";
import { app } from "../../workers/app";
import { ownAddress } from "../helpers/client-address";

const PAGES = ["/status", "/status.json", "/metrics"];
const nextClient = ownAddress;

async function get(path: string, settings: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Response> {
  return app.fetch(new Request(`http://relay.test${path}`, { headers }), { ...env, ADMIN_TOKEN: undefined, ...settings });
}

describe("the status pages are closed by default", () => {
  it("closed by default: without ADMIN_TOKEN, /status, /status.json and /metrics answer 401 on Cloudflare and on a relay listening beyond loopback", async () => {
    for (const settings of [{ RELAY_LOOPBACK_ONLY: undefined }, { RELAY_RUNTIME: "workerd", RELAY_LOOPBACK_ONLY: "false" }]) {
      for (const path of PAGES) {
        const res = await get(path, settings, { "cf-connecting-ip": nextClient() });
        expect(res.status, `${path} ${JSON.stringify(settings)}`).toBe(401);
        const body = (await res.json()) as { error: { code: string; message: string } };
        expect(body.error.code).toBe("auth_failed");
        expect(body.error.message).toContain("ADMIN_TOKEN");
      }
    }
  });

  it("open on loopback only: a self-hosted relay listening on loopback without ADMIN_TOKEN serves the pages, and says so", async () => {
    const loopback = { RELAY_RUNTIME: "workerd", RELAY_LOOPBACK_ONLY: "true" };
    for (const path of PAGES) expect((await get(path, loopback)).status, path).toBe(200);
    const json = (await (await get("/status.json", loopback)).json()) as { open: boolean };
    expect(json.open).toBe(true);
    // A token set closes them on loopback too.
    expect((await get("/status.json", { ...loopback, ADMIN_TOKEN: "t0ken" })).status).toBe(401);
  });

  it("wrong credentials to closed pages are throttled: past the allowed failures the address gets 429 with Retry-After", async () => {
    const client = nextClient();
    const headers = { "cf-connecting-ip": client, authorization: "Bearer guess" };
    for (let i = 0; i < ADMIN_LIMITS.auth_failures_per_window; i++)
      expect((await get("/metrics", { RELAY_LOOPBACK_ONLY: undefined }, headers)).status).toBe(401);
    const res = await get("/metrics", { RELAY_LOOPBACK_ONLY: undefined }, headers);
    expect(res.status).toBe(429);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});
