import { describe, expect, it } from "vitest";
import { relayBase } from "../../../clients/relay-url";
import { roomUrl } from "../../../clients/minca/relay-room";
import { parseArgs } from "../../../clients/minca/connect-args";

describe("one relay URL, every spelling", () => {
  it("ws(s):// and http(s):// give the same relay, in the scheme each endpoint speaks", () => {
    for (const u of ["wss://relay.example", "https://relay.example/", "WSS://relay.example//"]) {
      expect(relayBase(u, "ws")).toBe("wss://relay.example");
      expect(relayBase(u, "http")).toBe("https://relay.example");
    }
    expect(relayBase("ws://127.0.0.1:8787", "http")).toBe("http://127.0.0.1:8787");
    expect(relayBase("http://127.0.0.1:8787", "ws")).toBe("ws://127.0.0.1:8787");
    expect(relayBase("https://relay.example/prefix/", "ws")).toBe("wss://relay.example/prefix");
  });
  it("a bare host is TLS, except a loopback address", () => {
    expect(relayBase("relay.example.com", "ws")).toBe("wss://relay.example.com");
    expect(relayBase("relay.example.com:8443", "http")).toBe("https://relay.example.com:8443");
    expect(relayBase("127.0.0.1:8787", "ws")).toBe("ws://127.0.0.1:8787");
    expect(relayBase("localhost:8787", "http")).toBe("http://localhost:8787");
  });
  it("refuses other schemes, a query and a malformed host", () => {
    expect(() => relayBase("ftp://relay.example", "ws")).toThrow(TypeError);
    expect(() => relayBase("https://relay.example/?x=1", "ws")).toThrow(TypeError);
    expect(() => relayBase("https://", "ws")).toThrow();
  });
  it("the Minca room endpoint takes any spelling", () => {
    const room = "b" + "a".repeat(52);
    expect(roomUrl("https://relay.example", room)).toBe(`wss://relay.example/minca/v1/rooms/${room}`);
    expect(roomUrl("relay.example", room)).toBe(`wss://relay.example/minca/v1/rooms/${room}`);
  });
});

describe("npm run connect: arguments", () => {
  const env = {};
  it("no arguments, an unknown flag, or a flag as --relay's value is bad usage: exit 2 with the usage", () => {
    for (const argv of [
      [],
      ["home.example", "--relya", "r.example"],
      ["home.example", "--relay", "--name", "x"],
      ["home.example"],
      ["a", "b", "--relay", "r"],
    ]) {
      const r = parseArgs(argv, env);
      expect(r, argv.join(" ")).toMatchObject({ status: 2 });
      expect((r as { print: string }).print).toContain("usage: minca-connect");
    }
  });
  it("--help prints the usage and exits 0", () => {
    expect(parseArgs(["--help"], env)).toMatchObject({ status: 0 });
    expect(parseArgs(["-h"], env)).toMatchObject({ status: 0 });
  });
  it("a bare relay host is accepted, and MINCA_RELAY stands in for --relay", () => {
    expect(parseArgs(["home.example", "--relay", "relay.example.com", "--out", "/tmp/g.json"], env)).toMatchObject({
      home: "home.example",
      relay: "relay.example.com",
      out: "/tmp/g.json",
    });
    expect(parseArgs(["home.example"], { MINCA_RELAY: "ws://127.0.0.1:8787" })).toMatchObject({ relay: "ws://127.0.0.1:8787" });
    expect(parseArgs(["home.example", "--relay=relay.example", "--name=my laptop"], env)).toMatchObject({ name: "my laptop" });
  });
});
