// The Tally protocol's data flows (section 9) and multi-device rules (section 13), with real
// clients against the running relay.
import { afterEach, describe, expect, inject, it } from "vitest";
import type { TallyClient, InnerMessage } from "../../clients/tally/index";
import { connectInMemory, memoryStore } from "../../clients/tally/index";
import { relaySockets } from "../helpers/tally-sockets";
import { device, exchange, newUser, twoDevices } from "../helpers/tally";
import { waitFor } from "../helpers/wait";

const relay = inject("relayUrl");
const open: TallyClient[] = [];
async function dev(user = newUser(), opts = {}, before?: (c: TallyClient) => void) {
  const c = await device(relay, user, opts, before);
  open.push(c);
  return c;
}
afterEach(() => {
  for (const c of open.splice(0)) c.close();
});

function inbox(c: TallyClient) {
  const got: InnerMessage[] = [];
  c.on("message", (m) => void got.push(m));
  return got;
}
function receipts(c: TallyClient) {
  const got: string[] = [];
  c.on("receipt", (id) => void got.push(id));
  return got;
}

/** Wires two clients with an in-memory direct channel, as a WebRTC data channel would. */
const directChannel = connectInMemory;

describe("the Tally protocol section 9: data flows", () => {
  it("9.1 both online, direct channel: delivered without the relay, receipt on the channel", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await dev(alice);
    const b = await dev(bob);
    directChannel(a, b);
    const got = inbox(b);
    const acks = receipts(a);
    const queued: string[] = [];
    a.on("queued", (id) => void queued.push(id));
    const id = await a.send(bob.npub, "friend_request", { hello: "bob" });
    await waitFor(() => acks.includes(id), { what: "receipt" });
    expect(got.map((m) => [m.id, m.type, m.payload])).toEqual([[id, "friend_request", { hello: "bob" }]]);
    expect(queued).toEqual([]); // the relay never saw it
    expect(await a.store.listOutbox()).toEqual([]);
  });

  it("9.2 both online, no direct channel: the relay forwards at once, the receipt comes back the same way", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await dev(alice);
    const b = await dev(bob);
    const got = inbox(b);
    const acks = receipts(a);
    const statuses: string[] = [];
    a.on("queued", (_id, s) => void statuses.push(s));
    const id = await a.send(bob.npub, "note", { text: "hi" });
    await waitFor(() => acks.includes(id), { what: "receipt" });
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ id, from_user_id: alice.npub, to_user_id: bob.npub, payload: { text: "hi" } });
    expect(statuses[0]).toBe("stored"); // forwarded at once; "stored" to a stranger (presence is not told)
    expect(await a.store.listOutbox()).toEqual([]);
  });

  it("9.3 sender online, recipient offline: stored under the recipient, flushed on register before queue_drained", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await dev(alice);
    const statuses: string[] = [];
    a.on("queued", (_id, s) => void statuses.push(s));
    const acks = receipts(a);
    const id = await a.send(bob.npub, "note", { n: 1 });
    await waitFor(() => statuses.length >= 1, { what: "queued" });
    expect(statuses[0]).toBe("stored");
    const order: string[] = [];
    await dev(bob, {}, (c) => {
      c.on("message", (m) => void order.push(`message ${m.id}`));
      c.on("drained", () => void order.push("drained"));
    });
    expect(order).toEqual([`message ${id}`, "drained"]);
    await waitFor(() => acks.includes(id), { what: "receipt" });
    expect(await a.store.listOutbox()).toEqual([]);
  });

  it("9.4 both offline at different times: the relay holds the message and then the receipt", async () => {
    const alice = newUser();
    const bob = newUser();
    const aStore = memoryStore();
    const a1 = await dev(alice, { store: aStore });
    const id = await a1.send(bob.npub, "transaction_created", { amount: 5 });
    await waitFor(async () => (await aStore.getOutbox(id))?.attempts === 1, { what: "queued once" });
    const aSocket = relaySockets(a1)[0]!;
    a1.close(); // A goes offline
    // The relay ends A's session as A's close frame arrives (B's receipt below is stored, not
    // delivered). The client's socket may stay CLOSING for a while after that: the runtime
    // sometimes keeps the connection of a socket the client closed until the object's instance
    // goes (docs/upstream/kj-websocket-pipe-close.md), so CLOSED is not waited for here.
    await waitFor(() => aSocket.readyState !== WebSocket.OPEN, { what: "A's socket closing" });
    const got: InnerMessage[] = [];
    const bStore = memoryStore();
    const bQueued: string[] = [];
    const b = await dev(bob, { store: bStore }, (c) => {
      c.on("message", (m) => void got.push(m));
      c.on("queued", (_id, status) => void bQueued.push(status));
    });
    await b.idle();
    expect(got.map((m) => [m.id, m.payload])).toEqual([[id, { amount: 5 }]]);
    expect(await bStore.hasProcessed(alice.npub, id)).toBe(true);
    // B goes offline once the relay took its receipt into A's queue.
    await waitFor(() => bQueued.length >= 1, { what: "B's receipt queued" });
    expect(bQueued[0]).toBe("stored"); // A was offline at the relay: its receipt waits there
    b.close();
    const receipts: string[] = [];
    await dev(alice, { store: aStore }, (c) => c.on("receipt", (r) => void receipts.push(r)));
    await waitFor(() => receipts.includes(id), { what: "receipt after A reconnects" });
    expect(await aStore.listOutbox()).toEqual([]);
  });

  it("9.5 racing paths: a message sent on the direct channel and the relay is applied once", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await dev(alice);
    const b = await dev(bob);
    directChannel(a, b);
    const got = inbox(b);
    const acks = receipts(a);
    const seenTwice: string[] = [];
    b.on("duplicate", (m) => void seenTwice.push(m.id));
    const id = await a.send(bob.npub, "note", { race: true }, { paths: "both" });
    await waitFor(() => acks.includes(id), { what: "receipt" });
    await waitFor(() => seenTwice.includes(id), { what: "the second copy, dropped" });
    await b.idle();
    expect(got.map((m) => m.id)).toEqual([id]);
    expect(acks).toEqual([id]); // the second receipt is a no-op
  });

  it("8.2 retries keep the id: an unacknowledged message is re-queued after re-registering", async () => {
    const alice = newUser();
    const bob = newUser();
    const aStore = memoryStore();
    const a1 = await dev(alice, { store: aStore });
    const id = await a1.send(bob.npub, "note", {});
    await waitFor(async () => (await aStore.getOutbox(id))?.attempts === 1, { what: "first attempt" });
    const first = (await aStore.getOutbox(id))!.envelope;
    a1.close();
    await dev(alice, { store: aStore });
    await waitFor(async () => (await aStore.getOutbox(id))?.attempts === 2, { what: "re-queued after register" });
    expect((await aStore.getOutbox(id))!.envelope).toEqual(first);
    // The relay keyed its queue by (from, id): one slot, so bob applies it once.
    const got: string[] = [];
    await dev(bob, {}, (c) => c.on("message", (m) => void got.push(m.id)));
    await waitFor(async () => (await aStore.listOutbox()).length === 0, { what: "receipt" });
    expect(got).toEqual([id]);
  });
});

describe("the Tally protocol section 13: multi-device", () => {
  it("6.3 an envelope reaches every online device of the recipient", async () => {
    const alice = newUser();
    const { user: bob, a: b1, b: b2 } = await twoDevices(relay);
    open.push(b1, b2);
    const got1 = inbox(b1);
    const got2 = inbox(b2);
    const a = await dev(alice);
    const id = await a.send(bob.npub, "note", {});
    await waitFor(() => got1.length === 1 && got2.length === 1, { what: "both devices" });
    expect(got1[0].id).toBe(id);
    expect(got2[0].id).toBe(id);
    expect(bob.npub).toBe(b1.npub);
  });

  it("13.8 self-sync through the relay: a self-addressed envelope reaches the other own devices only, never stored", async () => {
    const { user, a: d1, b: d2 } = await twoDevices(relay);
    open.push(d1, d2);
    const selfSeen: InnerMessage[] = [];
    d2.on("self", (m) => void selfSeen.push(m));
    const mine: InnerMessage[] = [];
    d1.on("self", (m) => void mine.push(m));
    const statuses = new Map<string, string>();
    d1.on("queued", (qid, s) => void statuses.set(qid, s));
    const id = await d1.sendToOwnDevices("sync_hello", { known_ids: [] });
    await waitFor(() => selfSeen.some((m) => m.id === id), { what: "self envelope" });
    expect(selfSeen.find((m) => m.id === id)).toMatchObject({ type: "sync_hello", from_user_id: user.npub, to_user_id: user.npub });
    await waitFor(() => statuses.has(id), { what: "queued" });
    expect(statuses.get(id)).toBe("delivered");
    expect(mine.filter((m) => m.id === id)).toEqual([]);
    // A device that comes later gets nothing of it: self envelopes are never stored.
    const d3seen: InnerMessage[] = [];
    const d3 = await dev(user, {}, (c) => c.on("self", (m) => void d3seen.push(m)));
    await d3.idle(); // it is drained: everything the relay held for it came before queue_drained
    expect(d3seen.filter((m) => m.id === id)).toEqual([]);
  });

  it("13.8 a self envelope with no other device online is not stored", async () => {
    const d1 = await dev();
    const statuses: string[] = [];
    d1.on("queued", (_id, s) => void statuses.push(s));
    await d1.sendToOwnDevices("sync_hello", { known_ids: [] });
    await waitFor(() => statuses.length === 1, { what: "queued" });
    expect(statuses).toEqual(["not_stored"]);
  });

  it("13.1 own devices are introduced with peer_connect and told of departures with peer_disconnect", async () => {
    const user = newUser();
    const d1 = await dev(user);
    const seen1: string[] = [];
    const gone1: string[] = [];
    d1.on("peer_connect", (u, d) => void seen1.push(`${u}/${d}`));
    d1.on("peer_disconnect", (u, d) => void gone1.push(`${u}/${d}`));
    const d2 = await dev(user);
    await waitFor(() => seen1.length === 1, { what: "peer_connect" });
    expect(seen1).toEqual([`${user.npub}/${d2.deviceId}`]);
    await waitFor(() => d2.ownDevices.size === 1, { what: "d2 sees d1" });
    expect([...d2.ownDevices]).toEqual([d1.deviceId]);
    d2.close();
    await waitFor(() => gone1.length === 1, { what: "peer_disconnect" });
    expect(gone1).toEqual([`${user.npub}/${d2.deviceId ?? gone1[0].split("/")[1]}`]);
    expect(d1.ownDevices.size).toBe(0);
  });

  it("6.3 device-scoped signaling: connect_peer introduces every device, webrtc_signal reaches exactly one", async () => {
    const alice = newUser();
    const a = await dev(alice);
    const { user: bob, a: b1, b: b2 } = await twoDevices(relay);
    open.push(b1, b2);
    const aSeen: string[] = [];
    a.on("peer_connect", (u, d) => void aSeen.push(`${u}/${d}`));
    const b1Seen: string[] = [];
    const b2Seen: string[] = [];
    // (each of bob's devices also hears of the other: only alice's introductions count here)
    b1.on("peer_connect", (u, d) => void (u === alice.npub && b1Seen.push(`${u}/${d}`)));
    b2.on("peer_connect", (u, d) => void (u === alice.npub && b2Seen.push(`${u}/${d}`)));
    await exchange(a, bob.npub);
    a.connectPeer(bob.npub);
    await waitFor(() => aSeen.length === 2 && b1Seen.length === 1 && b2Seen.length === 1, { what: "introductions" });
    expect(aSeen.sort()).toEqual([`${bob.npub}/${b1.deviceId}`, `${bob.npub}/${b2.deviceId}`].sort());
    expect(b1Seen).toEqual([`${alice.npub}/${a.deviceId}`]);
    expect(b2Seen).toEqual([`${alice.npub}/${a.deviceId}`]);

    const b1Signals: unknown[] = [];
    const b2Signals: unknown[] = [];
    b1.on("signal", (u, d, s) => void b1Signals.push([u, d, s]));
    b2.on("signal", (u, d, s) => void b2Signals.push([u, d, s]));
    const offer = { type: "offer", sdp: "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n" };
    a.signal(bob.npub, b2.deviceId, offer);
    await waitFor(() => b2Signals.length === 1, { what: "signal" });
    expect(b2Signals[0]).toEqual([alice.npub, a.deviceId, offer]);
    const aSignals: unknown[] = [];
    a.on("signal", (u, d, s) => void aSignals.push([u, d, s]));
    b2.signal(alice.npub, a.deviceId, { type: "answer", sdp: "x" });
    await waitFor(() => aSignals.length === 1, { what: "answer" });
    expect(aSignals[0]).toEqual([bob.npub, b2.deviceId, { type: "answer", sdp: "x" }]);
    expect(b1Signals).toEqual([]);

    // Without a device id and two devices online: peer_unavailable.
    const errors: string[] = [];
    a.on("relay_error", (code) => void errors.push(code));
    a.signal(bob.npub, undefined, { candidate: "c" });
    await waitFor(() => errors.length === 1, { what: "error" });
    expect(errors).toEqual(["peer_unavailable"]);

    // A departure reaches the device it was introduced to.
    const aGone: string[] = [];
    a.on("peer_disconnect", (u, d) => void aGone.push(`${u}/${d}`));
    const b2Gone: string[] = [];
    b2.on("peer_disconnect", (u, d) => void b2Gone.push(`${u}/${d}`));
    const b1Id = b1.deviceId;
    b1.close();
    await waitFor(() => aGone.length === 1, { what: "peer_disconnect" });
    expect(aGone).toEqual([`${bob.npub}/${b1Id}`]);
    await waitFor(() => b2Gone.length === 1, { what: "own peer_disconnect" });
    expect(b2Gone).toEqual([`${bob.npub}/${b1Id}`]);
    // And alice's departure reaches every bob device she was introduced to.
    const b2GoneAlice: string[] = [];
    b2.on("peer_disconnect", (u, d) => void (u === alice.npub && b2GoneAlice.push(d)));
    const aId = a.deviceId;
    a.close();
    await waitFor(() => b2GoneAlice.length === 1, { what: "alice gone" });
    expect(b2GoneAlice).toEqual([aId]);
  });
});
