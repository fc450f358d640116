// docs/hostile.md, "The client address": rate limits key on an address taken only from where it
// can be trusted: cf-connecting-ip on Cloudflare; self-hosted, the header the operator names
// (TRUSTED_PROXY_HEADER) or, with none named, one shared bucket; never a header the client sets
// on a direct connection.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { clientAddress, normalizeAddress, SHARED_CLIENT } from "../../../workers/client-address";

const h = (o: Record<string, string>) => new Headers(o);

describe("docs/hostile.md: the client address rate limits key on", () => {
  it("on Cloudflare (and wrangler dev) it is cf-connecting-ip", () => {
    expect(clientAddress(h({ "cf-connecting-ip": "203.0.113.7" }), {})).toBe("203.0.113.7");
    expect(clientAddress(h({ "x-forwarded-for": "198.51.100.1" }), { TRUSTED_PROXY_HEADER: "x-forwarded-for" })).toBe(SHARED_CLIENT);
  });

  it("self-hosted with no proxy header named, every client shares one bucket: a client-set cf-connecting-ip or x-forwarded-for is never read", () => {
    const env = { RELAY_RUNTIME: "workerd" };
    expect(clientAddress(h({ "cf-connecting-ip": "203.0.113.7" }), env)).toBe(SHARED_CLIENT);
    expect(clientAddress(h({ "cf-connecting-ip": "203.0.113.8", "x-forwarded-for": "1.2.3.4" }), env)).toBe(SHARED_CLIENT);
    expect(clientAddress(h({}), { ...env, TRUSTED_PROXY_HEADER: "" })).toBe(SHARED_CLIENT);
  });

  it("self-hosted behind a proxy, the named header; of a list, the last entry (the one the proxy appended)", () => {
    const env = { RELAY_RUNTIME: "workerd", TRUSTED_PROXY_HEADER: "X-Forwarded-For" };
    expect(clientAddress(h({ "x-forwarded-for": "6.6.6.6, 203.0.113.9" }), env)).toBe("203.0.113.9");
    expect(clientAddress(h({ "cf-connecting-ip": "6.6.6.6" }), env)).toBe(SHARED_CLIENT);
    expect(clientAddress(h({ "x-real-ip": "203.0.113.10" }), { RELAY_RUNTIME: "workerd", TRUSTED_PROXY_HEADER: "x-real-ip" })).toBe(
      "203.0.113.10",
    );
    // a value that is not an address is not the shared client (which skips every per-client bound): null, answered 400
    expect(clientAddress(h({ "x-real-ip": "not an address" }), { RELAY_RUNTIME: "workerd", TRUSTED_PROXY_HEADER: "x-real-ip" })).toBe(null);
    expect(clientAddress(h({ "cf-connecting-ip": "shared" }), {})).toBe(null);
  });

  it("IPv6 addresses count by their /64, so one host cannot make up new addresses to escape its bucket", () => {
    expect(normalizeAddress("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(normalizeAddress("2001:db8:1:2:bbbb:cccc:dddd:eeee")).toBe("2001:db8:1:2::/64");
    expect(normalizeAddress("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(normalizeAddress("[2001:db8:1:2::5]:443")).toBe("2001:db8:1:2::/64");
    expect(normalizeAddress("::ffff:192.0.2.1")).toBe("192.0.2.1");
    expect(normalizeAddress("192.0.2.1")).toBe("192.0.2.1");
    expect(normalizeAddress("evil")).toBeNull();
    expect(normalizeAddress("1:2:3::4::5")).toBeNull();
  });

  it("fuzz: any header value gives an address key or null (answered 400), never the shared bucket, never a throw", () => {
    const env = { RELAY_RUNTIME: "workerd", TRUSTED_PROXY_HEADER: "x-forwarded-for" };
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (v) => {
        let headers: Headers;
        try {
          headers = h({ "x-forwarded-for": v });
        } catch {
          return; // not a header value at all
        }
        const key = clientAddress(headers, env);
        // an address, or null (not an address: answered 400), never the shared bucket for a value sent
        if (key === null) return;
        expect(typeof key).toBe("string");
        expect(key).not.toBe(SHARED_CLIENT);
        expect(key.length).toBeLessThanOrEqual(45);
      }),
    );
  });
});
