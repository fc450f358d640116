import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

describe("information document", () => {
  it("GET / with Accept: application/json lists every limit", async () => {
    const res = await SELF.fetch("http://relay.test/", { headers: { accept: "application/json" } });
    expect(res.status).toBe(200);
    const info = (await res.json()) as any;
    expect(info.software).toBe("edge-relay");
    expect(info.limits.tally.queue_max_envelopes).toBe(1000);
  });
});
