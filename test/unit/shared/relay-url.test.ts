import { describe, expect, it } from "vitest";
import { relayUrlMatches } from "../../../shared/tally/relay-url";

describe("auth event relay tag", () => {
  it("matches the host the client connected to, whatever the scheme or path", () => {
    expect(relayUrlMatches("wss://relay.example/tally/v1/npub1x", "relay.example")).toBe(true);
    expect(relayUrlMatches("ws://127.0.0.1:8787", "127.0.0.1:8787")).toBe(true);
    expect(relayUrlMatches("https://RELAY.example", "relay.example")).toBe(true);
  });
  it("matches the configured public URL's host", () => {
    expect(relayUrlMatches("wss://relay.example", "10.0.0.5:8787", "wss://relay.example")).toBe(true);
  });
  it("refuses other hosts, other ports, other schemes and non-URLs", () => {
    expect(relayUrlMatches("wss://evil.example", "relay.example")).toBe(false);
    expect(relayUrlMatches("ws://127.0.0.1:9999", "127.0.0.1:8787")).toBe(false);
    expect(relayUrlMatches("ftp://relay.example", "relay.example")).toBe(false);
    expect(relayUrlMatches("not a url", "relay.example")).toBe(false);
  });
});
