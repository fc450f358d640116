// docs/hostile.md, "Shared mode": `npm start` says loudly at start when its rate limits cannot
// tell clients apart on a public relay, and when the header it trusts can be set by clients.
import { describe, expect, it } from "vitest";
import { clientAddressWarnings } from "../../../scripts/client-address-warnings";

describe("the client address warnings at start", () => {
  it("a relay on loopback with nothing public: no warning; behind a proxy on loopback with the header: none", () => {
    expect(clientAddressWarnings("127.0.0.1", {})).toEqual([]);
    expect(clientAddressWarnings("::1", { PUBLIC_URL: "" })).toEqual([]);
    expect(clientAddressWarnings("127.0.0.1", { PUBLIC_URL: "wss://relay.example", TRUSTED_PROXY_HEADER: "x-real-ip" })).toEqual([]);
  });

  it("PUBLIC_URL set without TRUSTED_PROXY_HEADER: every client is the shared one, said at start with what to set", () => {
    const w = clientAddressWarnings("127.0.0.1", { PUBLIC_URL: "wss://relay.example" });
    expect(w).toHaveLength(1);
    expect(w[0]).toMatch(/TRUSTED_PROXY_HEADER/);
    expect(w[0]).toMatch(/shared/);
    expect(w[0]).toMatch(/X-Real-IP/);
  });

  it("listening beyond loopback without TRUSTED_PROXY_HEADER: the same warning", () => {
    for (const host of ["0.0.0.0", "[::]", "192.0.2.1"]) {
      const w = clientAddressWarnings(host, { TRUSTED_PROXY_HEADER: "  " });
      expect(w, host).toHaveLength(1);
      expect(w[0]).toMatch(/without TRUSTED_PROXY_HEADER/);
    }
  });

  it("TRUSTED_PROXY_HEADER set while listening beyond loopback: clients could set it themselves, said at start", () => {
    const w = clientAddressWarnings("0.0.0.0", { PUBLIC_URL: "wss://relay.example", TRUSTED_PROXY_HEADER: "x-real-ip" });
    expect(w).toHaveLength(1);
    expect(w[0]).toMatch(/x-real-ip while listening on 0\.0\.0\.0/);
    expect(w[0]).toMatch(/connects directly/);
  });
});
