// Test-only ways into a Tally user's object, through its production surface: a device connected
// and registered through the Worker, one envelope handed over as another user's object hands it
// (deliverAll), and the count of stored envelopes and contacts read from its storage.
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { expect } from "vitest";
import type { Delivery, TallyUser } from "../../durable-objects/tally/tally-user";
import { makeAuthEvent } from "../../shared/tally/auth";
import { TestSocket } from "./socket";
import { opaqueEnvelope, type User } from "./tally";

const RELAY = "ws://relay.test";

/** The user's object. */
export function stubOf(user: User): DurableObjectStub<TallyUser> {
  return env.TALLY_USER.get(env.TALLY_USER.idFromName(user.hex));
}

/** A WebSocket to the user's endpoint through the Worker, after its upgrade (101). */
export async function connectTo(user: User): Promise<TestSocket> {
  const res = await SELF.fetch(`http://relay.test/tally/v1/${user.npub}`, { headers: { Upgrade: "websocket" } });
  expect(res.status).toBe(101);
  const ws = res.webSocket!;
  const s = new TestSocket(ws as unknown as WebSocket);
  ws.accept();
  return s;
}

/** A register frame answering the socket's challenge. */
export async function registerFrame(s: TestSocket, user: User, acks = false) {
  const { challenge } = await s.next("challenge");
  return { type: "register", user_id: user.npub, auth: makeAuthEvent({ secretKey: user.secretKey, challenge, relayUrl: RELAY }), acks };
}

/** A registered device of `user`, after its flush (queue_drained). */
export async function registerDevice(user: User, acks = false): Promise<TestSocket> {
  const s = await connectTo(user);
  s.send(await registerFrame(s, user, acks));
  await s.next("registered");
  await s.next("queue_drained");
  return s;
}

/** Hands one envelope to the recipient's object as the sender's object does; what it did with it. */
export async function deliver(stub: DurableObjectStub<TallyUser>, raw: string, fromHex: string, id: string): Promise<Delivery> {
  const [status] = await stub.deliverAll([[raw, fromHex, id]]);
  if (status === null || status === undefined) throw new Error(`delivery of ${id} failed`);
  return status as Delivery;
}

/** How many envelopes are stored for the user. */
export function queuedCount(stub: DurableObjectStub<TallyUser>): Promise<number> {
  return runInDurableObject(stub, (_inst, state) => {
    const sql = state.storage.sql;
    if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'queue'").toArray().length === 0) return 0;
    return sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM queue").one().n;
  });
}

/** The user's contact rows: whom it sent to, whom it received from. */
export function contactRows(stub: DurableObjectStub<TallyUser>): Promise<Array<{ peer_hex: string; sent: number; received: number }>> {
  return runInDurableObject(stub, (_inst, state) => {
    const sql = state.storage.sql;
    if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'contacts'").toArray().length === 0) return [];
    return sql.exec<{ peer_hex: string; sent: number; received: number }>("SELECT peer_hex, sent, received FROM contacts").toArray();
  });
}

/** Two registered devices' users exchange one envelope each way (so each is the other's contact). */
export async function exchangeEnvelopes(a: TestSocket, from: User, b: TestSocket, to: User): Promise<void> {
  a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(from, to, "hello") });
  await a.next("queued");
  b.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(to, from, "receipt") });
  await b.next("queued");
}
