// Delivery an app can await (clients/tally/tracking.ts): the relays' answers and the receipt of a
// message, its state in the outbox, and cancelling one no path has carried yet.
import { afterEach, describe, expect, it } from "vitest";
import { TallyClient } from "../../../../clients/tally/index";
import { directPair, newUser } from "../../../helpers/tally";
import { fakeRelay, type FakeRelay } from "../../../helpers/tally-fake-relay";

const relays: FakeRelay[] = [];
const clients: TallyClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const r of relays.splice(0)) await r.close();
});

describe("delivery you can await", () => {
  it("sendTracked: the receipt is awaited, and the message's state says receipted", async () => {
    const { a, b, aToB, bToA } = directPair();
    b.on("message", () => "filed");
    const sent = await a.sendTracked(b.npub, "note", { text: "hi" });
    expect(await a.messageState(sent.id)).toMatchObject({ state: "sent" }); // handed to the channel
    await b.handleDirectFrame(aToB[0]);
    await a.handleDirectFrame(bToA[0]);
    expect(await sent.receipt).toEqual({ result: "filed", from: b.npub });
    expect(await a.messageState(sent.id)).toMatchObject({ state: "receipted", receipt: { result: "filed" } });
    // Asked after the fact, the answer is remembered.
    expect(await a.track(sent.id).receipt).toEqual({ result: "filed", from: b.npub });
  });

  it("the relay's answer is awaited: queued with its status and relay", async () => {
    const relay = await fakeRelay((ws, msg) => {
      if (msg.type !== "queue_peer_envelope") return;
      const env = msg.envelope as { id: string; to_user_id: string };
      ws.send(JSON.stringify({ type: "queued", id: env.id, to_user_id: env.to_user_id, status: "stored" }));
    });
    relays.push(relay);
    const c = new TallyClient({ relayUrl: relay.url, secretKey: newUser().secretKey, store: "memory" });
    clients.push(c);
    await c.connect();
    const sent = await c.sendTracked(newUser().npub, "note", {});
    expect(await sent.queued).toEqual({ status: "stored", relay: relay.url });
    expect(await c.messageState(sent.id)).toMatchObject({ state: "sent", attempts: 1, answers: [{ status: "stored" }] });
  });

  it("the outbox's state per message, and cancel: a message sent offline is taken back; one handed on is not", async () => {
    const { a, b, aToB } = directPair();
    const offline = new TallyClient({ relayUrl: "ws://unused", secretKey: newUser().secretKey, store: "memory" });
    clients.push(offline);
    const t = await offline.sendTracked(b.npub, "note", {});
    expect(await offline.outboxState()).toEqual([{ id: t.id, to: b.npub, created_at: expect.any(Number), state: "unsent", attempts: 0 }]);
    expect(await offline.cancel(t.id)).toBe(true);
    await expect(t.receipt).rejects.toThrow(/cancelled/);
    expect(await offline.outboxState()).toEqual([]);
    expect(await offline.messageState(t.id)).toEqual({ state: "cancelled" });
    // A message a channel carried can no longer be taken back.
    const carried = await a.send(b.npub, "note", {});
    expect(aToB).toHaveLength(1);
    expect(await a.cancel(carried)).toBe(false);
  });
});
