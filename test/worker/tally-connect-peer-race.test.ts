// connect_peer when the asking device leaves while the introduction is at the peer's object: the
// peer's devices, told of it by the introduction, hear it gone (peer_disconnect), and neither
// object keeps an introduction of the gone device (before: the peer's devices were never told,
// and the asker's object kept the gone device's introduction).
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { TallyUser } from "../../durable-objects/tally/tally-user";
import { newUser, type User } from "../helpers/tally";
import { exchangeEnvelopes, registerDevice, stubOf } from "../helpers/tally-user";

const introductions = (u: User) =>
  runInDurableObject(stubOf(u), (_o, state) =>
    state.storage.sql.exec<{ device_id: string; peer_device: string }>("SELECT device_id, peer_device FROM introductions").toArray(),
  );

describe("connect_peer and a departing device", () => {
  it("a device that leaves while connect_peer introduces it: the peer's devices hear peer_disconnect, no introduction is kept", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await registerDevice(alice);
    const b = await registerDevice(bob);
    await exchangeEnvelopes(a, alice, b, bob);
    const aliceDevice = a.ofType("registered")[0].device_id;

    // In alice's object: connect_peer starts (its introduction goes to bob's object), and alice's
    // socket closes before the answer comes back.
    await runInDurableObject(stubOf(alice), async (o: TallyUser, state) => {
      const ws = state.getWebSockets()[0];
      const asked = o.webSocketMessage(ws, JSON.stringify({ type: "connect_peer", peer_user_id: bob.npub }));
      await o.webSocketClose(ws, 1000, "leaving");
      await asked;
    });

    expect(await b.next("peer_connect")).toMatchObject({ peer_user_id: alice.npub, peer_device_id: aliceDevice });
    expect(await b.next("peer_disconnect")).toMatchObject({ peer_user_id: alice.npub, peer_device_id: aliceDevice });
    expect(await introductions(alice)).toEqual([]);
    expect((await introductions(bob)).filter((r) => r.peer_device === aliceDevice)).toEqual([]);
  });
});
