// A Tally sender's share of the Tally total (storage.sender_share; docs/hostile.md, "Shares of a
// total"), inside workerd: kept in the sender's own object, so it outlives the object's eviction,
// and a recipient handed an envelope past it stores nothing.
import { SELF, env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { makeAuthEvent } from "../../shared/tally/auth";
import { newUser, opaqueEnvelope, type User } from "../helpers/tally";
import { TestSocket } from "../helpers/socket";
import { queuedCount } from "../helpers/tally-user";
import type { TallyUser } from "../../durable-objects/tally/tally-user";

const RELAY = "ws://relay.test";

async function register(user: User): Promise<TestSocket> {
  const res = await SELF.fetch(`http://relay.test/tally/v1/${user.npub}`, { headers: { Upgrade: "websocket" } });
  expect(res.status).toBe(101);
  const ws = res.webSocket!;
  const s = new TestSocket(ws as unknown as WebSocket);
  ws.accept();
  const { challenge } = await s.next("challenge");
  s.send({ type: "register", user_id: user.npub, auth: makeAuthEvent({ secretKey: user.secretKey, challenge, relayUrl: RELAY }) });
  await s.next("queue_drained");
  return s;
}

const stubOf = (user: User): DurableObjectStub<TallyUser> => env.TALLY_USER.get(env.TALLY_USER.idFromName(user.hex));

async function send(s: TestSocket, from: User, to: User, id: string): Promise<string> {
  s.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(from, to, id) });
  return (await s.next("queued")).status;
}

describe("storage.sender_share in the sender's object", () => {
  it("a recipient handed an envelope past its sender's share stores nothing: offline, it answers not_stored", async () => {
    const sender = newUser();
    const bob = newUser();
    const raw = JSON.stringify(opaqueEnvelope(sender, bob, "past-share"));
    const [status] = await stubOf(bob).deliverAll([[raw, sender.hex, "past-share", false]]);
    expect(status).toBe("not_stored");
    expect(await queuedCount(stubOf(bob))).toBe(0);
  });

  it("the share is kept in the sender's SQLite: spent, then the object evicted, the sender's next envelope to a fresh npub is not stored; another key's is", async () => {
    const sender = newUser();
    let s = await register(sender);
    expect(await send(s, sender, newUser(), "first")).toBe("stored");
    // the share spent (as after many envelopes stored) and written, then the object evicted
    const kept = await runInDurableObject(stubOf(sender), (inst, st) => {
      const share = (inst as unknown as { sending: { share: { state: unknown; write(): void } } }).sending.share;
      share.state = { tokens: 0, at: Date.now() };
      share.write();
      return st.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'sender_share'").toArray();
    });
    expect(kept).toHaveLength(1);
    s.ws.close();
    await evictDurableObject(stubOf(sender));
    s = await register(sender);
    const fresh = newUser();
    expect(await send(s, sender, fresh, "second")).toBe("not_stored");
    expect(await queuedCount(stubOf(fresh))).toBe(0);
    const other = newUser();
    const o = await register(other);
    expect(await send(o, other, newUser(), "other")).toBe("stored");
    s.ws.close();
    o.ws.close();
  });
});
