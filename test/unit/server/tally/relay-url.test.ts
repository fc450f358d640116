import { describe, expect, it } from "vitest";
import { publicHosts, relayUrlMatches } from "../../../../server/tally/relay-url";

describe("auth event relay tag (docs/tally.md)", () => {
  it("with PUBLIC_URL unset: matches the host the client connected to, whatever the scheme or path", () => {
    expect(relayUrlMatches("wss://relay.example/tally/v1/npub1x", "relay.example")).toBe(true);
    expect(relayUrlMatches("ws://127.0.0.1:8787", "127.0.0.1:8787")).toBe(true);
    expect(relayUrlMatches("https://RELAY.example", "relay.example")).toBe(true);
    expect(relayUrlMatches("wss://relay.example", "relay.example", "")).toBe(true);
  });
  it("with PUBLIC_URL set: matches any of its comma-separated URLs' hosts", () => {
    expect(relayUrlMatches("wss://relay.example", "10.0.0.5:8787", "wss://relay.example")).toBe(true);
    const list = "wss://relay.example, https://other.example:8443";
    expect(relayUrlMatches("wss://other.example:8443/tally", "10.0.0.5:8787", list)).toBe(true);
    expect(relayUrlMatches("wss://relay.example", "10.0.0.5:8787", list)).toBe(true);
  });
  it("with PUBLIC_URL set, the Host the client sent no longer counts: a register signed for another relay and replayed here is refused", () => {
    // The client (or a malicious relay replaying a victim's event) chooses the Host header.
    expect(relayUrlMatches("wss://evil-relay.example", "evil-relay.example", "wss://relay.example")).toBe(false);
    expect(relayUrlMatches("ws://127.0.0.1:8787", "127.0.0.1:8787", "wss://relay.example")).toBe(false);
    // a malformed setting is still a setting: it names no host, and nothing matches
    expect(relayUrlMatches("wss://relay.example", "relay.example", "::not a url::")).toBe(false);
  });
  it("refuses other hosts, other ports, other schemes and non-URLs", () => {
    expect(relayUrlMatches("wss://evil.example", "relay.example")).toBe(false);
    expect(relayUrlMatches("ws://127.0.0.1:9999", "127.0.0.1:8787")).toBe(false);
    expect(relayUrlMatches("ftp://relay.example", "relay.example")).toBe(false);
    expect(relayUrlMatches("not a url", "relay.example")).toBe(false);
  });
  it("publicHosts reads the setting's list", () => {
    expect(publicHosts(undefined)).toEqual([]);
    expect(publicHosts("  ")).toEqual([]);
    expect(publicHosts("wss://A.example,relay.example:8443")).toEqual(["a.example", "relay.example:8443"]);
  });
});
