// A relay process that dies and comes back on the same data directory keeps what it stored.
import { afterAll, describe, expect, it } from "vitest";
import { startRelay, type RelayProcess } from "../helpers/relay-process";
import { newUser, opaqueEnvelope, rawRegistered } from "../helpers/tally";

let relay: RelayProcess | undefined;
afterAll(async () => {
  await relay?.stop();
});

describe("relay restart", () => {
  it("a recipient's queue survives the relay process being killed and restarted", async () => {
    relay = await startRelay();
    const alice = newUser();
    const bob = newUser();
    const a = await rawRegistered(relay.url, alice);
    for (const id of ["r1", "r2", "r3"]) a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, id) });
    for (let i = 0; i < 3; i++) expect((await a.next("queued")).status).toBe("stored");
    a.close();
    const { dataDir, port } = relay;
    await relay.stop({ kill: true }); // SIGKILL: no clean shutdown
    relay = await startRelay({ dataDir, port });
    const b = await rawRegistered(relay.url, bob);
    await b.next("queue_drained");
    expect(b.ofType("peer_envelope").map((e) => e.id)).toEqual(["r1", "r2", "r3"]);
    b.close();
  });
});
