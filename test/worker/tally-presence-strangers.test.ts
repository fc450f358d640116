// Presence is not told to strangers (docs/tally.md): to a sender the recipient never wrote to,
// `queued.status` is `stored` whether or not a device of the recipient was online; a contact (a
// user the recipient has written to) hears `delivered` when a device took it.
import { describe, expect, it } from "vitest";
import { newUser, opaqueEnvelope } from "../helpers/tally";
import { contactRows, registerDevice, stubOf } from "../helpers/tally-user";
import { waitFor } from "../helpers/wait";

describe("queued.status and presence", () => {
  it("presence is not told to strangers: queued.status to a sender that is not a contact is stored whether or not a device is online", async () => {
    const mallory = newUser();
    const bob = newUser();
    const m = await registerDevice(mallory);
    m.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(mallory, bob, "while-offline") });
    const offline = await m.next("queued");
    const b = await registerDevice(bob);
    m.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(mallory, bob, "while-online") });
    const online = await m.next("queued");
    await waitFor(() => b.ofType("peer_envelope").some((e: { id: string }) => e.id === "while-online"), {
      what: "the envelope on bob's device",
    });
    expect(offline.status).toBe("stored");
    expect(online.status).toBe(offline.status);
  });

  it("a contact (a user the recipient wrote to) hears delivered when a device took the envelope", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await registerDevice(alice);
    const b = await registerDevice(bob);
    b.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(bob, alice, "bob-writes-first") });
    await b.next("queued");
    await waitFor(async () => (await contactRows(stubOf(bob))).some((r) => r.peer_hex === alice.hex && r.sent === 1), {
      what: "bob's contact noted",
    });
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "answer") });
    expect((await a.next("queued")).status).toBe("delivered");
  });
});
