// The reference peer over the in-memory bus: the Passnote protocol's handshake, inst tokens, sealing under the
// passphrase key, deltas and the clock bound, end to end in memory. State, anti-entropy, flow
// control and sync: peer-sync.test.ts.
import { describe, expect, it } from "vitest";
import { MemoryBus } from "../../../../clients/passnote/memory-bus";
import { PassnotePeer } from "../../../../clients/passnote/peer";
import { openFrame, sealFrame } from "../../../../clients/passnote/protocol/seal";
import { decodeMessage, encodeMessage, type Message } from "../../../../clients/passnote/protocol/wire";
import { formatHlc } from "../../../../clients/passnote/protocol/hlc";
import { groupKey, tapped } from "../../../helpers/passnote";
import { waitFor } from "../../../helpers/wait";
import { settle } from "../../../helpers/passnote-settle";
import { pair, agreed } from "../../../helpers/passnote-pair";

describe("the Passnote protocol: connection handshake", () => {
  it("both sides send a handshake on connect and reply once: at most two handshake frames each, version 2 agreed", async () => {
    const { a, b, ta, tb, sentA, sentB } = await pair();
    await waitFor(() => agreed(a, tb) && agreed(b, ta), { what: "agreement" });
    await settle([a, b]);
    const count = (s: Message[]) => s.filter((m) => m.type === "handshake").length;
    expect(count(sentA)).toBeLessThanOrEqual(2);
    expect(count(sentB)).toBeLessThanOrEqual(2);
    const hs = sentA.find((m) => m.type === "handshake")!;
    expect(hs).toMatchObject({
      versions: [2],
      capabilities: ["recon1", "x-edge-relay/digest", expect.stringMatching(/^inst:[0-9a-f]{16}$/)],
    });
  });

  it("at most two handshakes per connection: heal() (anti-entropy) and repair() never send a third", async () => {
    const { a, b, ta, tb, sentA } = await pair({ a: { antiEntropyIntervalMs: 0 }, b: { antiEntropyIntervalMs: 0 } });
    await waitFor(() => agreed(a, tb) && agreed(b, ta), { what: "agreement" });
    for (let i = 0; i < 3; i++) {
      a.engine.repair();
      a.engine.antiEntropyPass();
      a.forceSync();
    }
    // Its frames to bob go out in order: once bob has the last poke, he has every handshake before it.
    const pokes = sentA.filter((m) => m.type === "poke").length;
    await waitFor(() => (b.engine.received.frames.poke ?? 0) >= pokes, { what: "alice's pokes at bob" });
    expect(sentA.filter((m) => m.type === "handshake").length).toBeLessThanOrEqual(2);
  });

  it("unknown capabilities are ignored, so is the excess: 40 capabilities, 20 versions and a 2,000-byte capability still agree", async () => {
    const bus = new MemoryBus();
    const key = groupKey();
    const ta = await bus.connect();
    const tb = await bus.connect();
    const sentB = tapped(tb, key); // what bob puts on the wire, swollen
    // bob's handshakes go out swollen past every bound: the rest of its frames are untouched.
    const send = tb.send.bind(tb);
    tb.send = (to, frame) => {
      const m = decodeMessage(openFrame(key, frame) ?? new Uint8Array(0));
      if (m?.type !== "handshake") return send(to, frame);
      const swollen: Message = {
        ...m,
        versions: [...m.versions, ...Array.from({ length: 20 - m.versions.length }, (_, i) => 100 + i)],
        capabilities: ["x".repeat(2000), ...m.capabilities, ...Array.from({ length: 39 - m.capabilities.length }, (_, i) => `future-${i}`)],
      };
      return send(to, sealFrame(key, encodeMessage(swollen)));
    };
    const a = new PassnotePeer({ transport: ta, key, node: "alice" });
    const b = new PassnotePeer({ transport: tb, key, node: "bob" });
    b.put("notes", "n1", "from bob");
    await waitFor(() => agreed(a, tb) && agreed(b, ta) && a.get("notes", "n1") === "from bob", { what: "agreement and sync" });
    const hs = sentB.find((m) => m.type === "handshake") as Extract<Message, { type: "handshake" }>;
    expect(hs.versions).toHaveLength(16); // what alice read of bob's 20
    expect(hs.capabilities).toHaveLength(32); // of 40: the 2,000-byte one skipped, 32 of the other 39 kept
    expect(hs.capabilities.slice(0, 3)).toEqual(["recon1", "x-edge-relay/digest", expect.stringMatching(/^inst:/)]);
    expect(a.engine.peerInfo(tb.self!)?.version).toBe(2);
    expect(a.engine.peerInfo(tb.self!)?.incompatible).toBe(false);
  });

  it("no common version raises PeerIncompatible and ends the exchange: no hello, no records", async () => {
    const seen: number[][] = [];
    const { a, b, ta, sentA, sentB } = await pair({ b: { versions: [1] } });
    a.engine.on("incompatible", (_p, theirs) => void seen.push(theirs));
    b.put("notes", "secret", "x");
    await waitFor(() => a.engine.peerInfo(b.transport.self!)?.incompatible, { what: "incompatible" });
    await settle([a, b]);
    expect(b.engine.peerInfo(ta.self!)?.incompatible).toBe(true);
    expect(a.store.size("notes")).toBe(0);
    expect([...sentA, ...sentB].filter((m) => m.type !== "handshake")).toEqual([]);
  });

  it("inst: a restarted peer (new token, same connection) is renegotiated: everything held for it is dropped and it syncs again", async () => {
    const { a, b, ta, tb, key } = await pair();
    await waitFor(() => agreed(a, tb), { what: "agreement" });
    const restarted: string[] = [];
    a.engine.on("restarted", (p) => void restarted.push(p));
    b.detach(); // the database instance closes; the transport never reports anything
    const b2 = new PassnotePeer({ transport: tb, key, node: "bob" });
    b2.put("notes", "after-restart", 1);
    await waitFor(() => restarted.length === 1, { what: "restart seen" });
    expect(restarted).toEqual([tb.self]);
    await waitFor(() => agreed(b2, ta) && a.get("notes", "after-restart") === 1, { what: "sync after restart" });
  });

  it("inst: a replayed handshake (a token already seen) changes nothing", async () => {
    const { a, ta, tb, key, sentB } = await pair();
    await waitFor(() => agreed(a, tb), { what: "agreement" });
    const restarted: string[] = [];
    a.engine.on("restarted", (p) => void restarted.push(p));
    const replay = sentB.find((m) => m.type === "handshake")!;
    await a.engine.receive(tb.self!, sealFrame(key, encodeMessage(replay)));
    expect(restarted).toEqual([]);
    expect(a.engine.peerInfo(tb.self!)?.version).toBe(2);
    expect(ta.self).toBeDefined();
  });
});

describe("the Passnote protocol: layer stack without an identity", () => {
  it("every frame travels sealed under the passphrase key; a peer with another key is dropped silently and never syncs", async () => {
    const { a, b, ta, tb } = await pair({ b: { key: groupKey() } });
    a.put("notes", "k", "v");
    b.put("notes", "j", "w");
    await settle([a, b]);
    expect(a.engine.peerInfo(tb.self!)?.version).toBeUndefined();
    expect(b.engine.peerInfo(ta.self!)?.version).toBeUndefined();
    expect(a.get("notes", "j")).toBeUndefined();
    expect(b.get("notes", "k")).toBeUndefined();
  });
});

describe("the Passnote protocol: deltas and the clock bound", () => {
  it("writes made together leave together: 1,200 puts in one turn are 3 delta frames of at most 500", async () => {
    const { a, b, ta, tb, sentA } = await pair();
    await waitFor(() => agreed(a, tb) && agreed(b, ta), { what: "agreement" });
    for (let i = 0; i < 1200; i++) a.put("notes", `k${i}`, i);
    await waitFor(() => b.store.size("notes") === 1200, { what: "records" });
    const deltas = sentA.filter((m) => m.type === "delta") as Extract<Message, { type: "delta" }>[];
    expect(deltas.map((d) => d.records.length)).toEqual([500, 500, 200]);
  });

  it("local writes reach the other peer as deltas, deletes included", async () => {
    const { a, b, ta, tb } = await pair();
    await waitFor(() => agreed(a, tb) && agreed(b, ta), { what: "agreement" });
    a.put("notes", "k1", { title: "hello", n: 2n ** 60n });
    await waitFor(() => b.get("notes", "k1"), { what: "delta" });
    expect(b.get("notes", "k1")).toEqual({ title: "hello", n: 2n ** 60n });
    b.delete("notes", "k1");
    await waitFor(() => a.get("notes", "k1") === undefined, { what: "delete" });
    expect(a.store.get("notes", "k1")!.is_deleted).toBe(true);
  });

  it("a delta carries at most 500 records", async () => {
    const { a, b, ta, tb, sentB } = await pair();
    for (let i = 0; i < 1200; i++)
      b.store.merge("notes", {
        key: `k${i}`,
        value: i,
        is_deleted: false,
        hlc: formatHlc({ wall: 1_700_000_000_000, counter: 0, node: "x" }),
      });
    a.forceSync();
    b.forceSync();
    await waitFor(() => a.store.size("notes") === 1200, { what: "records" });
    const deltas = sentB.filter((m) => m.type === "delta") as Extract<Message, { type: "delta" }>[];
    expect(deltas.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...deltas.map((d) => d.records.length))).toBeLessThanOrEqual(500);
    expect(ta.self && tb.self).toBeTruthy();
  });

  it("a record more than maxClockDrift (10 minutes) ahead of the receiver's clock is refused", async () => {
    const { a, b, ta, tb, key } = await pair();
    await waitFor(() => agreed(a, tb) && agreed(b, ta), { what: "agreement" });
    const refused: string[] = [];
    a.engine.on("refused", (_c, r) => void refused.push(r.key));
    const now = Date.now();
    const frame = encodeMessage({
      type: "delta",
      collection: "notes",
      records: [
        { key: "soon", value: 1, is_deleted: false, hlc: formatHlc({ wall: now + 9 * 60_000, counter: 0, node: "b" }) },
        { key: "future", value: 2, is_deleted: false, hlc: formatHlc({ wall: now + 11 * 60_000, counter: 0, node: "b" }) },
      ],
    });
    await a.engine.receive(tb.self!, sealFrame(key, frame));
    expect(a.get("notes", "soon")).toBe(1);
    expect(a.get("notes", "future")).toBeUndefined();
    expect(refused).toEqual(["future"]);
  });
});
