// Several relays at once (the Tally protocol section 6.5): a client registers on each, hands an envelope to
// every registered relay (or to the first), receives from all, processes each message once (dedup
// by id), acks each relay's copy, and keeps working while one relay is down.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { TallyClient, type InnerMessage } from "../../clients/tally/index";
import { freePort, startRelay, type RelayProcess } from "../helpers/relay-process";
import { exchange, newUser, wsBase, type User } from "../helpers/tally";
import { waitFor } from "../helpers/wait";

const relayA = wsBase(inject("relayUrl"));
let second: RelayProcess;
const open: TallyClient[] = [];
beforeAll(async () => {
  second = await startRelay();
});
afterAll(async () => {
  for (const c of open.splice(0)) c.close();
  await second?.stop({ kill: true });
});

async function client(user: User, relayUrls: string[], extra: Record<string, unknown> = {}) {
  const c = new TallyClient({ relayUrls, secretKey: user.secretKey, store: "memory", ...extra });
  open.push(c);
  const registered = new Set<string>();
  c.on("registered", (_d, _q, relay) => void registered.add(relay));
  await c.connect();
  return { c, registered };
}

describe("6.5 several relays", () => {
  it("6.5 a client MAY be connected to more than one relay: registered on each, an envelope handed to both, processed once, every relay's copy acked", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await client(alice, [relayA, second.wsUrl]);
    const b = await client(bob, [relayA, second.wsUrl]);
    await waitFor(() => a.registered.size === 2 && b.registered.size === 2, { what: "registered on both relays" });
    const handled: InnerMessage[] = [];
    const copies: string[] = [];
    b.c.on("message", (m) => void handled.push(m));
    b.c.on("duplicate", (m) => void copies.push(m.id));
    const queuedOn = new Set<string>();
    a.c.on("queued", (_id, _s, relay) => void queuedOn.add(relay));
    const receipts: string[] = [];
    a.c.on("receipt", (id) => void receipts.push(id));
    const id = await a.c.send(bob.npub, "note", { n: 1 });
    await waitFor(() => receipts.includes(id), { what: "the receipt" });
    await waitFor(() => copies.includes(id), { what: "the second relay's copy" });
    expect(handled.map((m) => m.id)).toEqual([id]); // once, though two relays delivered it
    // Each relay answers the sender after it handed the envelope on: its answer may come after the copy.
    await waitFor(() => queuedOn.size === 2, { what: "both relays' queued answers" });
    expect(queuedOn).toEqual(new Set([relayA, second.wsUrl]));
    // Each relay's copy was acked: a fresh device of bob's on either relay gets nothing queued.
    for (const url of [relayA, second.wsUrl]) {
      const fresh = new TallyClient({ relayUrl: url, secretKey: bob.secretKey, store: "memory" });
      open.push(fresh);
      let queued = -1;
      fresh.on("registered", (_d, q) => {
        queued = q;
      });
      await fresh.connect();
      expect(queued).toBe(0);
      fresh.close();
    }
  });

  it("6.5 with one relay down the other carries the message; mode 'first' moves on to the next registered relay", async () => {
    const alice = newUser();
    const bob = newUser();
    const dead = `ws://127.0.0.1:${await freePort()}`;
    const a = await client(alice, [dead, relayA], { relayMode: "first" });
    const b = await client(bob, [relayA, dead]);
    const got: string[] = [];
    b.c.on("message", (m) => void got.push(m.id));
    const id = await a.c.send(bob.npub, "note", {});
    await waitFor(() => got.includes(id), { what: "the message through the live relay" });
  });

  it("6.5 signaling uses a relay both peers share: alice on both relays, bob on the second only; the introduction, an offer to bob's device and his answer all go by the second", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await client(alice, [relayA, second.wsUrl]);
    const b = await client(bob, [second.wsUrl]);
    await waitFor(() => a.registered.size === 2, { what: "alice registered on both relays" });
    await exchange(a.c, bob.npub);
    const introduced: Array<[string, string]> = [];
    a.c.on("peer_connect", (u, d) => void (u === bob.npub && introduced.push([u, d])));
    const bobHeard: Array<[string, string, unknown]> = [];
    b.c.on("signal", (u, d, sig) => void bobHeard.push([u, d, sig]));
    const aliceHeard: Array<[string, string, unknown]> = [];
    a.c.on("signal", (u, d, sig) => void aliceHeard.push([u, d, sig]));
    a.c.connectPeer(bob.npub);
    await waitFor(() => introduced.length === 1, { what: "bob's device introduced by the relay he is on" });
    expect(introduced[0][1]).toBe(b.c.deviceId);
    // The first relay in alice's list does not know bob: the offer must take the second.
    const offer = { type: "offer", sdp: "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n" };
    a.c.signal(bob.npub, b.c.deviceId, offer);
    await waitFor(() => bobHeard.length === 1, { what: "the offer at bob's device" });
    expect(bobHeard[0][0]).toBe(alice.npub);
    expect(bobHeard[0][2]).toEqual(offer);
    b.c.signal(alice.npub, bobHeard[0][1], { type: "answer", sdp: "x" });
    await waitFor(() => aliceHeard.length === 1, { what: "bob's answer at alice" });
    expect(aliceHeard[0]).toEqual([bob.npub, b.c.deviceId, { type: "answer", sdp: "x" }]);
  });
});
