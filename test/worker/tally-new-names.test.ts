// First envelopes to strangers start objects (docs/hostile.md, "Requests that start objects"): a
// Tally user's first envelope to another user may start that user's object, so it takes a token of
// the sender's client bucket for new names (common.client_object_requests_*), the bucket the
// Worker takes one from for each request to a named object. One socket sending to made-up npubs
// used to start 224 objects a second. The client is cf-connecting-ip, as on Cloudflare.
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { makeAuthEvent } from "../../shared/tally/auth";
import { COMMON_LIMITS } from "../../shared/limits";
import { newUser, opaqueEnvelope, type User } from "../helpers/tally";
import { openSocket } from "../helpers/worker-socket";
import { waitFor } from "../helpers/wait";
import type { TestSocket } from "../helpers/socket";
import type { TestTallyUser } from "./test-objects";
import { ownAddress } from "../helpers/client-address";

const RELAY = "ws://relay.test";
const stubOf = (u: User) => env.TALLY_USER.get(env.TALLY_USER.idFromName(u.hex)) as unknown as DurableObjectStub<TestTallyUser>;

async function registered(user: User, address: string): Promise<TestSocket> {
  const s = await openSocket(`/tally/v1/${user.npub}`, { "cf-connecting-ip": address });
  const { challenge } = await s.next("challenge");
  s.send({ type: "register", user_id: user.npub, auth: makeAuthEvent({ secretKey: user.secretKey, challenge, relayUrl: RELAY }) });
  await s.next("queue_drained");
  return s;
}

describe("common.client_object_requests_*: first envelopes to strangers", () => {
  it("first envelopes to made-up npubs take tokens of the client's bucket for new names: past it they are answered rate_limited with their id; an envelope to a user written to before is not; another address still sends", async () => {
    const address = ownAddress();
    const sender = newUser();
    const friend = newUser();
    const s = await registered(sender, address);
    s.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(sender, friend, "friend-1") });
    expect((await s.next("queued")).status).toBe("stored");
    // The bucket is the client's across every name: spent by requests the Worker answers at once
    // (a made-up short topic is refused 400 after its token is taken).
    let limited = false;
    for (let i = 0; !limited && i < 2 * COMMON_LIMITS.client_object_requests_burst; i += 32) {
      const batch = await Promise.all(
        Array.from({ length: 32 }, () =>
          SELF.fetch("http://relay.test/minca/v1/mailbox/short", { headers: { "cf-connecting-ip": address } }),
        ),
      );
      limited = batch.some((r) => r.status === 429);
    }
    expect(limited).toBe(true);
    // The sender's object reads the bucket with its clock held still (a flood at any speed).
    await runInDurableObject(stubOf(sender), (inst: TestTallyUser) => {
      inst.frozenAt = Date.now();
    });
    for (let i = 0; i < 16; i++) s.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(sender, newUser(), `new-${i}`) });
    s.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(sender, friend, "friend-2") });
    await waitFor(() => s.ofType("queued").length + s.ofType("error").length >= 18 || undefined, { what: "every answer" });
    const refused = s.ofType("error").filter((e) => e.code === "rate_limited");
    expect(refused.length).toBeGreaterThanOrEqual(15);
    expect(refused.every((e) => /^new-\d+$/.test(e.id))).toBe(true);
    expect(s.ofType("queued").find((q) => q.id === "friend-2")?.status).toBe("stored");
    // Another address has its own bucket.
    const other = newUser();
    const o = await registered(other, ownAddress());
    o.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(other, newUser(), "other-1") });
    expect((await o.next("queued")).status).toBe("stored");
    s.ws.close();
    o.ws.close();
  });
});
