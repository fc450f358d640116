// WebRTC roles between one user's devices on several relays (clients/tally/webrtc.ts): each relay
// gives its own device ids, so the polite end is decided by the ids the announcing relay gave.
// Two real WebSocket relays stand in; the RTCPeerConnection is a stand-in that records nothing.
import { afterEach, describe, expect, it } from "vitest";
import { TallyClient } from "../../../../clients/tally/index";
import { DirectMesh } from "../../../../clients/tally/webrtc";
import { newUser } from "../../../helpers/tally";
import { fakeRelay, type FakeRelay } from "../../../helpers/tally-fake-relay";
import { waitFor } from "../../../helpers/wait";

class StubChannel {
  addEventListener() {}
  close() {}
}
class StubPeerConnection {
  onnegotiationneeded: (() => void) | null = null;
  onicecandidate: (() => void) | null = null;
  onconnectionstatechange: (() => void) | null = null;
  createDataChannel() {
    return new StubChannel();
  }
  close() {}
}

const relays: FakeRelay[] = [];
const clients: TallyClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const r of relays.splice(0)) await r.close();
});

describe("WebRTC roles with several relays", () => {
  it("6.3 WebRTC roles compare ids given by the same relay: a peer announced by the second relay is compared with this client's id there", async () => {
    const first = await fakeRelay(undefined, "f".repeat(16));
    const second = await fakeRelay(undefined, "0".repeat(16));
    relays.push(first, second);
    const user = newUser();
    const c = new TallyClient({ relayUrls: [first.url, second.url], secretKey: user.secretKey, store: "memory" });
    clients.push(c);
    const roles: Array<[string, boolean]> = [];
    new DirectMesh(c, {
      RTCPeerConnection: StubPeerConnection as unknown as typeof RTCPeerConnection,
      onState: (_u, d, state, polite) => void (state === "connecting" && roles.push([d, polite])),
    });
    const registered: string[] = [];
    c.on("registered", (_d, _q, relay) => void registered.push(relay));
    await c.connect();
    await waitFor(() => registered.length === 2, { what: "both relays registered" });
    // The second relay announces another device of the user, with an id of its own numbering.
    second.connections[0].send(JSON.stringify({ type: "peer_connect", peer_user_id: c.npub, peer_device_id: "8".repeat(16) }));
    await waitFor(() => roles.length === 1, { what: "the connection to the announced device" });
    // At the second relay this client is 000..., the peer 888...: this end is the polite one
    // (comparing the first relay's fff... with 888... would make both ends impolite).
    expect(roles).toEqual([["8".repeat(16), true]]);
  });
});
