// The Passnote protocol, "Messages", poke: "send me a hello", the pull half of forceSync (its own test).
import { describe, expect, it } from "vitest";
import { randomBytes } from "../../../../../shared/encoding";
import { makeHandshake } from "../../../../../clients/passnote/protocol/handshake";
import { openFrame, sealFrame } from "../../../../../clients/passnote/protocol/seal";
import { SyncEngine } from "../../../../../clients/passnote/protocol/sync";
import { decodeMessage, encodeMessage, type Message } from "../../../../../clients/passnote/protocol/wire";

const PEER = "0000000000000002";

function engine() {
  const key = randomBytes(32);
  const sent: Message[] = [];
  const e = new SyncEngine({
    node: "alice",
    key,
    selfId: () => "0000000000000001",
    transmit: async (_to, bytes) => void sent.push(decodeMessage(openFrame(key, bytes)!)!),
  });
  const from = (m: Message) => e.receive(PEER, sealFrame(key, encodeMessage(m)));
  const settle = async () => {
    await e.idle();
    await new Promise((r) => setTimeout(r, 0)); // the send window hands frames on in a later task
  };
  return { e, sent, from, settle };
}

describe("the Passnote protocol: poke", () => {
  it("poke: an agreed peer's poke is answered with one hello, and nothing else", async () => {
    const { e, sent, from, settle } = engine();
    e.put("notes", "n1", 1); // something to sync, so that a wrong answer would show
    await from(makeHandshake({ inst: "0123456789abcdef" }));
    await settle();
    expect(e.peerInfo(PEER)?.version).toBe(2);
    const before = sent.length;
    await from({ type: "poke" });
    await settle();
    expect(sent.slice(before)).toEqual([{ type: "hello", node: "alice" }]);
    // Every poke is answered: it is the peer's way to pull again (forceSync).
    await from({ type: "poke" });
    await settle();
    expect(sent.slice(before)).toEqual([
      { type: "hello", node: "alice" },
      { type: "hello", node: "alice" },
    ]);
  });

  it("poke: before the version is agreed, a poke is not answered", async () => {
    const { sent, from, settle } = engine();
    await from({ type: "poke" });
    await settle();
    expect(sent.map((m) => m.type)).toEqual(["handshake"]); // our handshake on meeting the peer, no hello
  });

  it("poke: forceSync sends every agreed peer a hello and a poke", async () => {
    const { e, sent, from, settle } = engine();
    await from(makeHandshake({ inst: "0123456789abcdef" }));
    await from({ type: "poke" }); // the peer has spoken since agreeing: our handshake arrived
    await settle();
    const before = sent.length;
    e.forceSync();
    await settle();
    expect(sent.slice(before)).toEqual([{ type: "hello", node: "alice" }, { type: "poke" }]);
  });
});
