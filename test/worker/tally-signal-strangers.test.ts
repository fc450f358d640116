// webrtc_signal goes only between own devices and users with an envelope exchange, as connect_peer's
// introductions (docs/tally.md, "Signaling"): to anyone else it reaches no device and is answered
// exactly as for a user with no device online, so a stranger cannot learn whether an npub has a
// device online (before: nothing for an online user with one device, peer_unavailable otherwise).
import { describe, expect, it } from "vitest";
import { newUser, opaqueEnvelope, type User } from "../helpers/tally";
import { exchangeEnvelopes, registerDevice } from "../helpers/tally-user";
import type { TestSocket } from "../helpers/socket";

/**
 * The frames a webrtc_signal from `a` to `to` brings back to `a`, up to the pong of a ping the
 * object answers after it (not the runtime's, which answers the exact text `{"type":"ping"}` at once).
 */
async function answerTo(a: TestSocket, to: User, signal: unknown): Promise<unknown[]> {
  const from = a.messages.length;
  a.send({ type: "webrtc_signal", peer_user_id: to.npub, signal });
  a.send({ type: "ping", after: "signal" });
  await a.next("pong");
  return a.messages.slice(from).filter((m) => m.type !== "pong");
}

describe("webrtc_signal and contacts", () => {
  it("a stranger's webrtc_signal reaches no device and is answered the same whether or not the user is online", async () => {
    const mallory = newUser();
    const bob = newUser();
    const m = await registerDevice(mallory);
    const offline = await answerTo(m, bob, { sdp: "offer" });
    const b = await registerDevice(bob); // bob online with exactly one device: user-level routing would reach it
    const online = await answerTo(m, bob, { sdp: "offer" });
    expect(online).toEqual(offline);
    expect(online).toEqual([{ type: "error", code: "peer_unavailable", message: expect.any(String) }]);
    b.send({ type: "ping", after: "signal" });
    await b.next("pong");
    expect(b.ofType("webrtc_signal")).toEqual([]);
  });

  it("a one-way envelope is not an exchange: the signal still reaches no device", async () => {
    const mallory = newUser();
    const bob = newUser();
    const m = await registerDevice(mallory);
    const b = await registerDevice(bob);
    m.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(mallory, bob, "hi") });
    expect((await m.next("queued")).status).toBe("stored"); // delivered; "stored" to a stranger
    expect((await answerTo(m, bob, { sdp: "offer" })).map((f: any) => f.code)).toEqual(["peer_unavailable"]);
    b.send({ type: "ping", after: "signal" });
    await b.next("pong");
    expect(b.ofType("webrtc_signal")).toEqual([]);
  });

  it("between users with an envelope exchange the signal reaches the device; own devices signal each other", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await registerDevice(alice);
    const b = await registerDevice(bob);
    await exchangeEnvelopes(a, alice, b, bob);
    expect(await answerTo(a, bob, { sdp: "offer" })).toEqual([]);
    expect(await b.next("webrtc_signal")).toMatchObject({ peer_user_id: alice.npub, signal: { sdp: "offer" } });
    const a2 = await registerDevice(alice);
    const a2id = a2.ofType("registered")[0].device_id;
    a.send({ type: "webrtc_signal", peer_user_id: alice.npub, peer_device_id: a2id, signal: { own: true } });
    expect((await a2.next("webrtc_signal")).signal).toEqual({ own: true });
  });
});
