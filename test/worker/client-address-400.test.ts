// In trusted mode (cf-connecting-ip on Cloudflare, TRUSTED_PROXY_HEADER self-hosted), a header
// value that is not an address is answered 400 (docs/hostile.md, "The client address"): it used
// to count as the shared client, which skips every per-client bound.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

describe("the trusted client address header", () => {
  it("a value that is not an address is answered 400 bad_request, before any route; an address is served", async () => {
    for (const value of ["shared", "not an address", "999.1.1.1.1"]) {
      const res = await SELF.fetch(`http://relay.test/minca/v1/mailbox/trusted-header-topic-${Date.now()}`, {
        method: "POST",
        body: "x",
        headers: { "cf-connecting-ip": value },
      });
      expect(res.status, value).toBe(400);
      expect(((await res.json()) as any).error.code).toBe("bad_request");
    }
    expect((await SELF.fetch("http://relay.test/healthz", { headers: { "cf-connecting-ip": "203.0.113.200" } })).status).toBe(200);
  });
});
