// A bad setting refuses every request, /healthz included, with 500 bad_setting naming it (the
// self-hosted launcher asks /healthz at start and stops with that message).
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../workers/index";

async function get(path: string, settings: Record<string, string>): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(
    new Request(`http://relay.test${path}`, { headers: { accept: "application/json" } }),
    { ...env, ...settings },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

describe("settings checked at start", () => {
  it("a bad setting (STORAGE_TALLY_BYTES=lots) answers every request, /healthz included, 500 bad_setting naming the setting and why", async () => {
    for (const path of ["/healthz", "/", "/minca/v1/mailbox/" + "A".repeat(43)]) {
      const res = await get(path, { STORAGE_TALLY_BYTES: "lots" });
      expect(res.status, path).toBe(500);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("bad_setting");
      expect(body.error.message).toMatch(/^STORAGE_TALLY_BYTES: "lots" is not a size/);
    }
    expect((await get("/healthz", { STORAGE_TALLY_BYTES: "2GiB" })).status).toBe(200);
  });

  it("a malformed VAPID_PRIVATE_KEY is refused at start naming the variable, not at the first wake", async () => {
    const res = await get("/healthz", { VAPID_PRIVATE_KEY: "not-a-key" });
    expect(res.status).toBe(500);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("bad_setting");
    expect(body.error.message).toMatch(/^VAPID_PRIVATE_KEY: is not a P-256 private key/);
  });
});
