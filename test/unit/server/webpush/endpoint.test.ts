// docs/mailbox.md's push-endpoint rule, range by range, in every form a URL parser normalises.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  addressRange,
  checkPushEndpoint,
  hostsOf,
  isRelayPath,
  parseEndpointAllow,
  type EndpointPolicy,
} from "../../../../server/webpush/endpoint";
import "../../../helpers/fast-check-seed";

const none: EndpointPolicy = { allow: [], ownHosts: [] };
const ok = (endpoint: string, policy = none) => checkPushEndpoint(endpoint, policy).ok;
const reason = (endpoint: string, policy = none) => {
  const r = checkPushEndpoint(endpoint, policy);
  return r.ok ? "ok" : r.reason;
};

describe("docs/mailbox.md: a push endpoint is an https URL on the default port whose host is a public name", () => {
  it("accepts the big push services' endpoints", () => {
    expect(ok("https://fcm.googleapis.com/fcm/send/abc:def")).toBe(true);
    expect(ok("https://updates.push.services.mozilla.com/wpush/v2/gAAAA")).toBe(true);
    expect(ok("https://web.push.apple.com/QGk")).toBe(true);
    expect(ok("https://push.example.com:443/x")).toBe(true); // the default port, written out
    expect(ok("https://push.example.com./x")).toBe(true); // a fully qualified name
  });

  it("refuses plain http, other schemes, other ports and credentials", () => {
    expect(reason("http://push.example.com/x")).toMatch(/https/);
    expect(reason("ftp://push.example.com/x")).toMatch(/https/);
    expect(reason("https://push.example.com:8443/x")).toMatch(/default https port/);
    expect(reason("https://push.example.com:80/x")).toMatch(/default https port/);
    expect(reason("https://user:pw@push.example.com/x")).toMatch(/credentials/);
    expect(reason("not a url")).toMatch(/not a URL/);
  });

  it("refuses IPv4 literals of every range, in decimal, hex, octal and short forms and with a trailing dot", () => {
    const cases: Array<[string, string]> = [
      ["https://127.0.0.1/", "loopback"],
      ["https://127.255.1.2/", "loopback"],
      ["https://2130706433/", "loopback"], // 127.0.0.1 as one decimal number
      ["https://0x7f.1/", "loopback"], // hex, short form
      ["https://0177.0.0.1/", "loopback"], // octal
      ["https://127.1/", "loopback"],
      ["https://127.0.0.1./", "loopback"], // trailing dot
      ["https://10.1.2.3/", "private"],
      ["https://172.16.0.1/", "private"],
      ["https://172.31.255.255/", "private"],
      ["https://192.168.1.1/", "private"],
      ["https://0xc0a80101/", "private"],
      ["https://169.254.169.254/", "link-local"], // cloud metadata
      ["https://0.0.0.0/", "unspecified"],
      ["https://0/", "unspecified"],
      ["https://100.64.0.1/", "shared"],
      ["https://224.0.0.1/", "multicast"],
      ["https://255.255.255.255/", "reserved"],
      ["https://8.8.8.8/", "public"], // a name is required even for a public address
    ];
    for (const [url, range] of cases) expect(reason(url), url).toBe(`endpoint host must be a name, not an IP address (${range})`);
    expect(addressRange("172.15.0.1")).toBe("public");
    expect(addressRange("172.32.0.1")).toBe("public");
  });

  it("refuses IPv6 literals of every range, IPv4-mapped ones by the IPv4 address they carry", () => {
    const cases: Array<[string, string]> = [
      ["https://[::1]/", "loopback"],
      ["https://[0:0:0:0:0:0:0:1]/", "loopback"],
      ["https://[::]/", "unspecified"],
      ["https://[fe80::1]/", "link-local"],
      ["https://[febf::1]/", "link-local"],
      ["https://[fc00::1]/", "unique-local"],
      ["https://[fd12:3456::1]/", "unique-local"],
      ["https://[::ffff:127.0.0.1]/", "loopback"], // IPv4-mapped
      ["https://[::ffff:7f00:1]/", "loopback"],
      ["https://[::ffff:10.0.0.1]/", "private"],
      ["https://[::ffff:169.254.169.254]/", "link-local"],
      ["https://[::127.0.0.1]/", "loopback"], // IPv4-compatible
      ["https://[64:ff9b::192.168.0.1]/", "private"], // NAT64
      ["https://[ff02::1]/", "multicast"],
      ["https://[2001:4860:4860::8888]/", "public"],
    ];
    for (const [url, range] of cases) expect(reason(url), url).toBe(`endpoint host must be a name, not an IP address (${range})`);
  });

  it("refuses loopback and local-network names, with or without a trailing dot", () => {
    for (const url of [
      "https://localhost/x",
      "https://LOCALHOST./x",
      "https://api.localhost/x",
      "https://printer.local/x",
      "https://db.internal/x",
      "https://router.home.arpa/x",
      "https://intranet/x",
    ]) {
      expect(reason(url), url).toBe("endpoint host must be a public DNS name");
    }
  });

  it("refuses the relay's own host and every PUBLIC_URL host, on any port and in any case", () => {
    const policy: EndpointPolicy = {
      allow: [],
      ownHosts: ["relay.example.com", ...hostsOf("wss://Relay.Example.net, https://other.example.org:8443")],
    };
    expect(reason("https://relay.example.com/minca/v1/mailbox/aaaaaaaaaaaaaaaa", policy)).toBe("endpoint must not be this relay");
    expect(reason("https://RELAY.example.com./x", policy)).toBe("endpoint must not be this relay");
    expect(reason("https://relay.example.net/x", policy)).toBe("endpoint must not be this relay");
    expect(reason("https://other.example.org/x", policy)).toBe("endpoint must not be this relay");
    expect(ok("https://push.example.com/x", policy)).toBe(true);
  });

  it("a relay path is refused on any host, allowed origins included: the Host a request names cannot make the relay's own mailbox an endpoint", () => {
    const allow = parseEndpointAllow("http://127.0.0.1").allow;
    for (const url of [
      "https://relay-under-another-name.example/minca/v1/mailbox/aaaaaaaaaaaaaaaa",
      "https://push.example.com/tally/v1/npub1xyz",
      "https://push.example.com/passnote/v2/abc",
      "https://push.example.com/minca/v1/host/accounts",
      "https://push.example.com/status/login",
      "https://push.example.com/metrics",
      "https://push.example.com/",
      "https://push.example.com",
      "https://push.example.com//minca/v1/mailbox/x", // empty segments skipped, as a router may
      "https://push.example.com/./minca/v1/mailbox/x",
      "https://push.example.com/x/../minca/v1/mailbox/x", // the URL parser resolves dot segments
      "https://push.example.com/%6Dinca/v1/mailbox/x", // percent escapes, decoded as the router decodes them
      "https://push.example.com/%256Dinca/v1/mailbox/x",
      "https://push.example.com/MINCA/v1/mailbox/x",
      "http://127.0.0.1:8787/minca/v1/mailbox/aaaaaaaaaaaaaaaa", // an allowed origin, still not a relay path
    ]) {
      expect(reason(url, { allow, ownHosts: [] }), url).toBe("endpoint path must not be a route of this relay");
    }
    expect(ok("https://push.example.com/push/minca/v1/mailbox/x")).toBe(true); // only the first segment names a route
    expect(ok("https://push.example.com/mincab/x")).toBe(true);
    expect(ok("http://127.0.0.1:8787/push/1", { allow, ownHosts: [] })).toBe(true);
  });

  it("isRelayPath never throws and reads every path whose first segment folds to a route as one (fuzzed)", () => {
    fc.assert(
      fc.property(fc.string(), (p) => {
        isRelayPath(p);
        expect(isRelayPath(`/minca/${p}`)).toBe(true);
        expect(isRelayPath(`/TALLY/${p}`)).toBe(true);
      }),
    );
  });

  it("PUSH_ENDPOINT_ALLOW: an allowed origin passes the rule, http included; without a port, every port of its host", () => {
    const { allow, bad } = parseEndpointAllow(
      " http://127.0.0.1 , https://push.lan:8443,,nonsense, ftp://x.example, https://a.example/path",
    );
    expect(bad).toEqual(["nonsense", "ftp://x.example", "https://a.example/path"]);
    const policy: EndpointPolicy = { allow, ownHosts: ["127.0.0.1"] };
    expect(ok("http://127.0.0.1:9999/push/1", policy)).toBe(true);
    expect(ok("http://127.0.0.1/push/1", policy)).toBe(true);
    expect(ok("https://127.0.0.1:9999/push/1", policy)).toBe(false); // another scheme is another origin
    expect(ok("http://127.0.0.2:9999/push/1", policy)).toBe(false);
    expect(ok("http://[::1]:9999/push/1", policy)).toBe(false);
    expect(ok("https://push.lan:8443/x", policy)).toBe(true);
    expect(ok("https://push.lan:8444/x", policy)).toBe(false);
    expect(parseEndpointAllow("").allow).toEqual([]);
    expect(parseEndpointAllow(undefined).allow).toEqual([]);
    expect(parseEndpointAllow("http://[::1]:8080").allow).toEqual([{ protocol: "http:", hostname: "[::1]", port: "8080" }]);
  });

  it("no URL whose host parses as a loopback, private or local address passes without PUSH_ENDPOINT_ALLOW (fuzzed)", () => {
    const octet = fc.integer({ min: 0, max: 255 });
    const privateV4 = fc.oneof(
      fc.tuple(fc.constant(127), octet, octet, octet),
      fc.tuple(fc.constant(10), octet, octet, octet),
      fc.tuple(fc.constant(192), fc.constant(168), octet, octet),
      fc.tuple(fc.constant(172), fc.integer({ min: 16, max: 31 }), octet, octet),
      fc.tuple(fc.constant(169), fc.constant(254), octet, octet),
    );
    const form = fc.constantFrom("dotted", "decimal", "hex", "mapped", "dot");
    fc.assert(
      fc.property(privateV4, form, fc.constantFrom("", ":443", ":8080"), (b, f, port) => {
        const n = ((b[0] << 24) >>> 0) + (b[1] << 16) + (b[2] << 8) + b[3];
        const host =
          f === "dotted"
            ? b.join(".")
            : f === "decimal"
              ? String(n)
              : f === "hex"
                ? `0x${n.toString(16)}`
                : f === "mapped"
                  ? `[::ffff:${b.join(".")}]`
                  : `${b.join(".")}.`;
        return !ok(`https://${host}${port}/push`);
      }),
      { numRuns: 500 },
    );
  });
});
