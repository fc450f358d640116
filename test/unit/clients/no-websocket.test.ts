// On a platform without a WebSocket (Node 20), every client that connects says so and how to pass
// the `ws` package's, as the Tally client does, instead of "WebSocket is not defined" or "WS is not
// a constructor" from deep inside a connection.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { relayRooms } from "../../../clients/minca/relay-room";
import { RelayTransport } from "../../../clients/passnote/relay-transport";
import { NO_WEBSOCKET_MESSAGE } from "../../../clients/tally/connection";

const platform = globalThis.WebSocket;
beforeEach(() => {
  // Node 20: no global WebSocket.
  (globalThis as { WebSocket?: unknown }).WebSocket = undefined;
});
afterEach(() => {
  globalThis.WebSocket = platform;
});

describe("a client without a WebSocket (Node 20) says so, naming the ws package, as Tally's does", () => {
  it("Minca's code-channel rooms (relayRooms)", () => {
    expect(() => relayRooms("ws://127.0.0.1:1")).toThrow(/^no WebSocket here \(Node 20 has none\): install the `ws` package and pass it/);
  });

  it("Passnote's relay transport (RelayTransport.connect), before it reaches the network", async () => {
    await expect(
      RelayTransport.connect({ relayUrl: "ws://127.0.0.1:1", rosterKey: new Uint8Array(32), rate: { perSecond: 10, burst: 10 } }),
    ).rejects.toThrow(/^no WebSocket here \(Node 20 has none\): install the `ws` package and pass it/);
  });

  it("the three messages start alike", () => {
    expect(NO_WEBSOCKET_MESSAGE).toMatch(/^no WebSocket here \(Node 20 has none\): install the `ws` package and pass it/);
  });

  it("a WebSocket passed in options is used as before", () => {
    expect(() => relayRooms("ws://127.0.0.1:1", { WebSocket: platform })).not.toThrow();
  });
});
