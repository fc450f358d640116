// Shared mode (no trusted client address) has no per-client bounds, so the relay bounds the
// sockets kept open unauthenticated across the relay, every client together
// (common.max_unauthenticated_sockets; docs/hostile.md, "Parked sockets"): past it an upgrade is
// HTTP 503 with Retry-After before any socket exists, while registered devices and /healthz are
// served. One client used to hold 2,126 parked sockets (8,093 file descriptors).
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { COMMON_LIMITS } from "../../shared/limits";
import { reportParked } from "../../durable-objects/base/parked-across";
import { newUser } from "../helpers/tally";
import { registerDevice } from "../helpers/tally-user";

describe("common.max_unauthenticated_sockets: the relay-wide bound of parked sockets", () => {
  it("past the bound (in shared mode), an upgrade is 503 unavailable with Retry-After; a registered device keeps working and /healthz answers; below it upgrades are served again", async () => {
    const device = await registerDevice(newUser());
    // The relay's parked sockets at the bound, as the objects report them (a flood over many names,
    // each object within its own cap): counted in the isolate every object shares.
    reportParked("flood-objects", new Map([["shared", COMMON_LIMITS.max_unauthenticated_sockets]]), Date.now() + 60_000);
    try {
      const res = await SELF.fetch(`http://relay.test/tally/v1/${newUser().npub}`, { headers: { Upgrade: "websocket" } });
      expect(res.status).toBe(503);
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(((await res.json()) as any).error.code).toBe("unavailable");
      expect((await SELF.fetch("http://relay.test/healthz")).status).toBe(200);
      device.send({ type: "ping", x: 1 });
      await device.next("pong");
    } finally {
      reportParked("flood-objects", new Map(), 0);
    }
    const again = await SELF.fetch(`http://relay.test/tally/v1/${newUser().npub}`, { headers: { Upgrade: "websocket" } });
    expect(again.status).toBe(101);
    again.webSocket?.accept();
    again.webSocket?.close();
    device.ws.close();
  });
});
