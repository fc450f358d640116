// /healthz answers even while the relay refuses work (docs/operating.md, "Health"): it is answered
// right after the request's id and settings, before the operator's block list (read from the
// RelayPolicy object when its cache is stale), the per-client buckets and the caps, so no bound
// counts it, no refusal reaches it, and it reaches no object. During a flood of parked sockets in
// shared mode it used to time out. The client is cf-connecting-ip, as on Cloudflare.
import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { forgetPolicy } from "../../workers/policy";
import { relayPolicy } from "../../server/relay-objects";
import { COMMON_LIMITS } from "../../shared/limits";
import type { TestRelayPolicy } from "./test-objects";
import { ownAddress } from "../helpers/client-address";

const policy = () => relayPolicy(env) as unknown as DurableObjectStub<TestRelayPolicy>;

const probe = (headers: Record<string, string> = {}) => SELF.fetch("http://relay.test/healthz", { headers });

/** `p`, or "no answer" after `ms` (the relay under test answers /healthz in milliseconds). */
function within<T>(p: Promise<T>, ms: number): Promise<T | "no answer"> {
  return Promise.race([p, new Promise<"no answer">((r) => setTimeout(() => r("no answer"), ms))]);
}

describe("/healthz first", () => {
  it("/healthz reaches no object: with the policy object held and the lists' cache stale, it answers at once", async () => {
    await policy().holdSnapshots();
    try {
      forgetPolicy();
      const res = await within(probe(), 5_000);
      expect(res === "no answer" ? res : res.status).toBe(200);
    } finally {
      await policy().releaseSnapshots();
    }
  });

  it("a blocked address's probe is answered 200 (its other requests 403)", async () => {
    const address = ownAddress();
    expect(await relayPolicy(env).add("blocked_ips", address, "test")).toBe(true);
    forgetPolicy();
    try {
      expect((await probe({ "cf-connecting-ip": address })).status).toBe(200);
      expect((await SELF.fetch("http://relay.test/", { headers: { "cf-connecting-ip": address } })).status).toBe(403);
    } finally {
      await relayPolicy(env).remove("blocked_ips", address);
      forgetPolicy();
    }
  });

  it(`no bucket counts it: ${COMMON_LIMITS.client_object_requests_burst + 64} probes from one address all answer 200, and the address's requests to objects are still served`, async () => {
    const address = ownAddress();
    for (let i = 0; i < COMMON_LIMITS.client_object_requests_burst + 64; i += 64) {
      const batch = await Promise.all(Array.from({ length: 64 }, () => probe({ "cf-connecting-ip": address })));
      expect(batch.filter((r) => r.status !== 200)).toEqual([]);
    }
    const res = await SELF.fetch(`http://relay.test/minca/v1/mailbox/healthz-${crypto.randomUUID()}`, {
      headers: { "cf-connecting-ip": address },
    });
    expect(res.status).not.toBe(429);
  });
});
