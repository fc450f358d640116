// A banned npub (the admin API's banpubkey, docs/admin-api.md) is refused by its own object, not only
// by the Worker's cached lists: the object keeps the ban, so a register that reaches it (a Worker
// isolate that has not seen the ban yet) is refused `banned` with 1008, and envelopes to the
// banned npub are answered not_stored with nothing stored and nothing leased, until unban().
import { env, evictDurableObject } from "cloudflare:test";
import { relayStats } from "../../server/relay-objects";
import { STATS_LIMITS } from "../../shared/limits";
import { waitFor } from "../helpers/wait";
import { describe, expect, it } from "vitest";
import { CLOSE_CODES } from "../../shared/limits";
import { newUser, opaqueEnvelope } from "../helpers/tally";
import { connectTo, contactRows, deliver, queuedCount, registerDevice, registerFrame, stubOf } from "../helpers/tally-user";

describe("a banned npub, in its own object", () => {
  it("a banned npub's register is refused with error banned and close 1008, though the Worker's lists let the upgrade through", async () => {
    const bob = newUser();
    expect(await stubOf(bob).ban()).toEqual({ received: 0, sent: 0 });
    // The Worker's lists (the policy object) do not name bob: the upgrade reaches the object.
    const s = await connectTo(bob);
    s.send(await registerFrame(s, bob));
    expect((await s.next("error")).code).toBe("banned");
    expect(await s.closed).toBe(CLOSE_CODES.policy);
    expect(s.ofType("registered")).toEqual([]);
  });

  it("the ban is stored: it holds after the object's eviction", async () => {
    const bob = newUser();
    await stubOf(bob).ban();
    await evictDurableObject(stubOf(bob));
    const s = await connectTo(bob);
    s.send(await registerFrame(s, bob));
    expect((await s.next("error")).code).toBe("banned");
    expect(await s.closed).toBe(CLOSE_CODES.policy);
  });

  it("envelopes to a banned npub are answered not_stored: nothing stored, no contact, no lease", async () => {
    const alice = newUser();
    const bob = newUser();
    const stub = stubOf(bob);
    await stub.ban();
    const a = await registerDevice(alice);
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "to-banned") });
    expect(await a.next("queued")).toMatchObject({ id: "to-banned", status: "not_stored" });
    expect(await deliver(stub, JSON.stringify(opaqueEnvelope(alice, bob, "rpc")), alice.hex, "rpc")).toBe("not_stored");
    expect(await queuedCount(stub)).toBe(0);
    expect(await contactRows(stub)).toEqual([]);
    expect(await stub.leaseHeld()).toBe(0);
  });

  it("a ban closes the user's sockets with 1008 and drops its stored envelopes and contacts", async () => {
    const alice = newUser();
    const bob = newUser();
    const stub = stubOf(bob);
    for (const id of ["e1", "e2"])
      expect(await deliver(stub, JSON.stringify(opaqueEnvelope(alice, bob, id)), alice.hex, id)).toBe("stored");
    const b = await registerDevice(bob, true); // acks: the envelopes stay stored until acked
    expect(await stub.ban()).toEqual({ received: 2, sent: 0 });
    expect(await b.closed).toBe(CLOSE_CODES.policy);
    expect(await queuedCount(stub)).toBe(0);
    expect(await contactRows(stub)).toEqual([]);
  });

  it("a ban purges what the banned key sent that waits in other users' queues (its contacts it wrote to); others' envelopes stay", async () => {
    const spammer = newUser();
    const carol = newUser();
    const victims = [newUser(), newUser()];
    const s = await registerDevice(spammer);
    for (const [i, v] of victims.entries())
      for (const k of [0, 1, 2]) {
        s.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(spammer, v, `spam-${i}-${k}`) });
        expect((await s.next("queued")).status).toBe("stored");
      }
    expect(await deliver(stubOf(victims[0]), JSON.stringify(opaqueEnvelope(carol, victims[0], "kept")), carol.hex, "kept")).toBe("stored");
    expect(await stubOf(spammer).ban()).toEqual({ received: 0, sent: 6 });
    expect(await queuedCount(stubOf(victims[0]))).toBe(1);
    expect(await queuedCount(stubOf(victims[1]))).toBe(0);
    const v = await registerDevice(victims[0]);
    expect(v.ofType("peer_envelope").map((e) => e.id)).toEqual(["kept"]);
  });

  it("unban(): the user registers again (with an empty queue) and envelopes to it are stored again", async () => {
    const alice = newUser();
    const bob = newUser();
    const stub = stubOf(bob);
    await deliver(stub, JSON.stringify(opaqueEnvelope(alice, bob, "before")), alice.hex, "before");
    await stub.ban();
    await stub.unban();
    expect(await deliver(stub, JSON.stringify(opaqueEnvelope(alice, bob, "after")), alice.hex, "after")).toBe("stored");
    const b = await registerDevice(bob);
    expect(b.ofType("registered")[0].queued).toBe(1);
    expect(b.ofType("peer_envelope").map((e) => e.id)).toEqual(["after"]);
  });

  it("after a ban, the status page's stored count catches up (the object reports it, with no socket open)", async () => {
    const alice = newUser();
    const bob = newUser();
    const stub = stubOf(bob);
    const stored = async () => (await relayStats(env).snapshot()).envelopes_stored;
    const before = await stored();
    for (const id of ["s1", "s2", "s3"])
      expect(await deliver(stub, JSON.stringify(opaqueEnvelope(alice, bob, id)), alice.hex, id)).toBe("stored");
    await waitFor(async () => (await stored()) === before + 3, { timeout: STATS_LIMITS.flush_interval_ms * 5, what: "3 stored" });
    expect(await stub.ban()).toEqual({ received: 3, sent: 0 });
    await waitFor(async () => (await stored()) === before, {
      timeout: STATS_LIMITS.flush_interval_ms * 5,
      what: "the count after the ban",
    });
  });
});
