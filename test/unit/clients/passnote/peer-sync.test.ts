// The reference peer over the in-memory bus: state (per-collection watermarks), the clock bound's
// document rule, periodic anti-entropy and its bound, flow control and inbound order, and sync.
import { describe, expect, it, vi } from "vitest";
import { MemoryBus } from "../../../../clients/passnote/memory-bus";
import { PassnotePeer } from "../../../../clients/passnote/peer";
import { sealFrame } from "../../../../clients/passnote/protocol/seal";
import { encodeMessage, type Message } from "../../../../clients/passnote/protocol/wire";
import { formatHlc } from "../../../../clients/passnote/protocol/hlc";
import { MemoryStore, type PassnoteStore } from "../../../../clients/passnote/protocol/records";
import { PASSNOTE_LIMITS } from "../../../../shared/limits";
import { fillDifferent, groupKey, sameRecords } from "../../../helpers/passnote";
import { waitFor } from "../../../helpers/wait";
import { settle } from "../../../helpers/passnote-settle";
import { pair, agreed } from "../../../helpers/passnote-pair";

// A thousand collections cross the in-memory bus a macrotask per frame: several seconds on an idle
// machine, more than the default 10 s wait on a loaded one. The waits are long so that only a
// stall fails them, never the machine's pace.
const SLOW = 60_000;
describe("the Passnote protocol: state (per-collection watermarks)", { timeout: 2 * SLOW }, () => {
  const rec = (key: string) => ({ key, value: 1, is_deleted: false, hlc: formatHlc({ wall: 1_000, counter: 0, node: "x" }) });
  const openingProbes = (sent: Message[]) =>
    sent
      .filter((m) => m.type === "reconcile" && m.probes.length === 1 && m.probes[0].depth === 0 && m.requests.length === 0)
      .map((m) => (m as { collection: string }).collection);
  const stateSizes = (sent: Message[]) =>
    sent.filter((m) => m.type === "state").map((m) => (m as { watermarks: unknown[] }).watermarks.length);

  it("state: 1,025 collections from a protocol-only peer (all in one state message) sync", async () => {
    const { a, b, ta, tb, key } = await pair();
    await waitFor(() => agreed(a, tb) && agreed(b, ta) && a.engine.pendingFrames() === 0 && b.engine.pendingFrames() === 0, {
      what: "agreement",
      timeout: SLOW,
    });
    for (let i = 0; i < 1_025; i++) a.store.merge(`c${i}`, rec(`k${i}`)); // not pushed: only the state tells bob
    const watermarks = a.store.collectionNames().map((collection) => ({ collection, watermark: a.store.watermark(collection) }));
    expect(watermarks).toHaveLength(1_025);
    await b.engine.receive(ta.self!, sealFrame(key, encodeMessage({ type: "state", watermarks })));
    await waitFor(() => b.store.collectionNames().length === 1_025, { what: "every collection", timeout: SLOW });
    expect(sameRecordsIn(a.store, b.store)).toBe(true);
  });

  it('state: a state of exactly 1,024 entries is not read as "more follow": a later state naming a collection under a new watermark is probed again', async () => {
    const { a, b, ta, tb, key } = await pair();
    await waitFor(() => agreed(a, tb) && agreed(b, ta) && a.engine.pendingFrames() === 0 && b.engine.pendingFrames() === 0, {
      what: "agreement",
      timeout: SLOW,
    });
    for (let i = 0; i < 1_024; i++) a.store.merge(`c${i}`, rec(`k${i}`));
    const stateOf = () => a.store.collectionNames().map((collection) => ({ collection, watermark: a.store.watermark(collection) }));
    await b.engine.receive(ta.self!, sealFrame(key, encodeMessage({ type: "state", watermarks: stateOf() })));
    await waitFor(() => b.store.collectionNames().length === 1_024, { what: "every collection", timeout: SLOW });
    a.store.merge("c0", { ...rec("later"), hlc: formatHlc({ wall: 2_000, counter: 0, node: "x" }) });
    await b.engine.receive(
      ta.self!,
      sealFrame(key, encodeMessage({ type: "state", watermarks: stateOf().filter((w) => w.collection === "c0") })),
    );
    await waitFor(() => b.get("c0", "later") === 1, { what: "the later record", timeout: SLOW });
  });

  it("state: this peer sends one complete state while it fits (1,024 collections: one message, nothing after it)", async () => {
    const sa = new MemoryStore();
    for (let i = 0; i < 1_024; i++) sa.merge(`c${i}`, rec("k"));
    const { a, b, sentA } = await pair({ a: { store: sa } });
    await waitFor(() => a.engine.agreedPeers().length === 1 && b.engine.agreedPeers().length === 1, { what: "agreement", timeout: SLOW });
    await waitFor(() => b.store.collectionNames().length === 1_024, { what: "every collection", timeout: SLOW });
    await waitFor(() => a.engine.pendingFrames() === 0 && b.engine.pendingFrames() === 0, { what: "quiet", timeout: SLOW });
    sentA.length = 0;
    b.forceSync(); // bob asks alice for her state
    await waitFor(() => stateSizes(sentA).length >= 1 && a.engine.pendingFrames() === 0, { what: "alice's state", timeout: SLOW });
    expect(stateSizes(sentA)).toEqual([1_024]);
  });

  it("state: watermarks past state_max_bytes go in several complete states, and each collection is probed once", async () => {
    const long = (i: number) => `c${i}-${"x".repeat(900)}`;
    const sa = new MemoryStore();
    const sb = new MemoryStore();
    for (let i = 0; i < 300; i++) sa.merge(long(i), rec("k"));
    for (let i = 0; i < 30; i++) sb.merge(`b${i}`, rec("k"));
    for (let i = 0; i < 10; i++) sb.merge(long(i), rec("other"));
    const { a, b, sentA, sentB } = await pair({ a: { store: sa }, b: { store: sb } });
    await waitFor(() => a.store.collectionNames().length === 330 && b.store.collectionNames().length === 330, {
      what: "every collection both ways",
      timeout: SLOW,
    });
    await waitFor(() => a.engine.pendingFrames() === 0 && b.engine.pendingFrames() === 0, { what: "quiet", timeout: SLOW });
    sentA.length = 0;
    sentB.length = 0;
    b.forceSync(); // bob's hello: alice answers with her state, in parts
    await waitFor(() => openingProbes(sentB).length >= 330 && a.engine.pendingFrames() === 0 && b.engine.pendingFrames() === 0, {
      what: "bob's probes",
      timeout: SLOW,
    });
    const sizes = stateSizes(sentA);
    expect(sizes.length).toBeGreaterThan(1);
    expect(sizes.reduce((x, y) => x + y, 0)).toBe(330);
    const probes = openingProbes(sentB);
    expect(probes.length).toBe(330);
    expect(new Set(probes).size).toBe(330);
  });
});

function sameRecordsIn(x: PassnoteStore, y: PassnoteStore): boolean {
  return x.collectionNames().every((c) => JSON.stringify(x.all(c)) === JSON.stringify(y.all(c)));
}

describe("the Passnote protocol: the clock bound's document rule and periodic anti-entropy", () => {
  it("clock bound, document rule: a refused record takes the rest of its document (its key's other records in the delta) with it, and nothing else", async () => {
    const { a, b, ta, tb, key } = await pair();
    await waitFor(() => agreed(a, tb) && agreed(b, ta), { what: "agreement" });
    const refused: string[] = [];
    a.engine.on("refused", (_c, r) => void refused.push(`${r.key}@${r.hlc.slice(0, 15)}`));
    const now = Date.now();
    const hlc = (ms: number) => formatHlc({ wall: ms, counter: 0, node: "b" });
    const records = [
      { key: "doc", value: "old version", is_deleted: false, hlc: hlc(now - 1000) },
      { key: "doc", value: "future version", is_deleted: false, hlc: hlc(now + 11 * 60_000) },
      { key: "other", value: 3, is_deleted: false, hlc: hlc(now) },
    ];
    await a.engine.receive(tb.self!, sealFrame(key, encodeMessage({ type: "delta", collection: "notes", records })));
    expect(a.get("notes", "doc")).toBeUndefined(); // neither version of the document
    expect(a.get("notes", "other")).toBe(3); // the rest of the delta merges
    expect(refused).toEqual([`doc@${records[0].hlc.slice(0, 15)}`, `doc@${records[1].hlc.slice(0, 15)}`]);
  });

  it("periodic anti-entropy: a record the clock bound refused returns once the receiver's clock allows it, without a reconnect or forceSync", async () => {
    // The passes' timer is a fake one this test fires; the bus still delivers on real macrotasks.
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    try {
      let bobAhead = 0;
      const { a, b } = await pair({
        a: { now: () => Date.now() + 20 * 60_000, antiEntropyIntervalMs: 100 }, // alice's clock runs 20 minutes fast
        b: { now: () => Date.now() + bobAhead, antiEntropyIntervalMs: 100 },
      });
      const refused: string[] = [];
      b.engine.on("refused", (_c, r) => void refused.push(r.key));
      await waitFor(() => b.engine.agreedPeers().length === 1 && a.engine.agreedPeers().length === 1, { what: "agreement" });
      a.put("notes", "from-the-future", 1);
      await waitFor(() => refused.length > 0, { what: "the clock bound refuses it" });
      const passes = () => a.engine.sent.frames.digest ?? 0;
      const before = passes();
      for (let i = 0; i < 2; i++) {
        vi.advanceTimersByTime(100); // a pass runs on each side
        await settle([a, b]);
      }
      expect(passes() - before).toBe(2);
      expect(b.get("notes", "from-the-future")).toBeUndefined(); // still refused
      bobAhead = 20 * 60_000; // bob's clock catches up
      vi.advanceTimersByTime(100);
      await settle([a, b]);
      expect(b.get("notes", "from-the-future")).toBe(1); // the next periodic pass brought it
      a.detach();
      b.detach();
    } finally {
      vi.useRealTimers();
    }
  });

  it("periodic anti-entropy runs every anti_entropy_interval_ms (5 minutes) by default, and 0 turns it off", async () => {
    const bus = new MemoryBus();
    const spy = vi.spyOn(globalThis, "setInterval");
    try {
      const p1 = new PassnotePeer({ transport: await bus.connect(), key: groupKey(), node: "x" });
      expect(spy.mock.calls.map((c) => c[1])).toEqual([PASSNOTE_LIMITS.anti_entropy_interval_ms]);
      expect(PASSNOTE_LIMITS.anti_entropy_interval_ms).toBe(300_000);
      const p2 = new PassnotePeer({ transport: await bus.connect(), key: groupKey(), node: "y", antiEntropyIntervalMs: 0 });
      expect(spy).toHaveBeenCalledTimes(1);
      p1.detach();
      p2.detach();
    } finally {
      spy.mockRestore();
    }
  });
});

describe("the periodic anti-entropy pass is bounded", () => {
  const rec = (key: string, wall = 1_000) => ({ key, value: 1, is_deleted: false, hlc: formatHlc({ wall, counter: 0, node: "x" }) });
  const total = (p: PassnotePeer) => Object.values(p.engine.sent.frames).reduce((x, y) => x + y, 0);

  async function settledPair(collections: number) {
    const sa = new MemoryStore();
    const sb = new MemoryStore();
    for (let i = 0; i < collections; i++) for (const s of [sa, sb]) s.merge(`c${i}`, rec(`k${i}`));
    const p = await pair({ a: { store: sa, antiEntropyIntervalMs: 0 }, b: { store: sb, antiEntropyIntervalMs: 0 } });
    await waitFor(() => agreed(p.a, p.tb) && agreed(p.b, p.ta), { what: "agreement" });
    await settle([p.a, p.b]);
    return p;
  }

  it("periodic pass: with 500 collections and no change, a pass sends O(1) frames per peer (one digest), whatever the number of collections", async () => {
    const { a, b } = await settledPair(500);
    const before = [total(a), total(b)];
    a.engine.antiEntropyPass();
    b.engine.antiEntropyPass();
    await settle([a, b]);
    expect([total(a) - before[0], total(b) - before[1]]).toEqual([1, 1]);
    expect(a.engine.sent.frames.digest).toBe(1);
  });

  it("periodic pass: a change in one of 500 collections that no delta carried is found and brought by the pass", async () => {
    const { a, b } = await settledPair(500);
    a.store.merge("c123", rec("unsent", 2_000)); // in the store, never pushed (a lost frame, say)
    a.engine.antiEntropyPass();
    await waitFor(() => b.get("c123", "unsent") === 1, { what: "the pass brings it" });
  });

  it("after a digest mismatch, only collections whose watermark says they may differ are probed, not every named collection; a difference below every watermark is still found", async () => {
    const { a, b, sentB } = await settledPair(500);
    const probed = (from: number) => new Set(sentB.slice(from).flatMap((m) => (m.type === "reconcile" ? [m.collection] : [])));
    let mark = sentB.length;
    a.store.merge("c123", rec("unsent", 2_000)); // in the store, never pushed (a lost frame, say)
    a.engine.antiEntropyPass();
    await waitFor(() => b.get("c123", "unsent") === 1, { what: "the pass brings it" });
    await settle([a, b]);
    expect([...probed(mark)]).toEqual(["c123"]);
    // A record older than the watermarks (learnt from a third peer, say): no watermark differs, so
    // the pass probes every collection, and finds it.
    mark = sentB.length;
    a.store.merge("c7", rec("old", 500));
    a.engine.antiEntropyPass();
    await waitFor(() => b.get("c7", "old") === 1, { what: "the pass brings the old record" });
    expect(probed(mark).size).toBeGreaterThan(1);
  });

  it("send queue: the opening probes of a state naming 300 collections are paced, so the queue to a peer stays a few windows long", async () => {
    const sa = new MemoryStore();
    for (let i = 0; i < 300; i++) sa.merge(`c${i}`, rec("k"));
    const { a, b, tb, ta } = await pair({ a: { store: sa } });
    await waitFor(() => b.store.collectionNames().length === 300, { what: "every collection" });
    const peaks = [a.engine.core.peers.get(tb.self!)!.window.peakPending, b.engine.core.peers.get(ta.self!)!.window.peakPending];
    expect(Math.max(...peaks)).toBeLessThanOrEqual(4 * PASSNOTE_LIMITS.max_in_flight_frames + 8);
  });

  it("send queue: past send_queue_max_frames a frame is left out, and once the queue drains the peer is re-reconciled: nothing is lost", async () => {
    // The bound scaled down (100 frames instead of send_queue_max_frames) to keep the test quick.
    const max = 100;
    const { a, b, ta, tb } = await pair({ a: { sendQueueMaxFrames: max } });
    await waitFor(() => agreed(a, tb) && agreed(b, ta), { what: "agreement" });
    const n = 400;
    for (let i = 0; i < n; i++) a.put(`w${i}`, "k", i); // one delta per collection, in one turn
    await waitFor(() => b.store.collectionNames().length === n, { what: "every write" });
    expect(a.engine.core.peers.get(tb.self!)!.window.peakPending).toBeLessThanOrEqual(max + PASSNOTE_LIMITS.max_in_flight_frames);
  });
});

describe("the Passnote protocol: flow control and inbound order", () => {
  it("at most 16 frames are in flight to one peer, and they leave in order", async () => {
    const { a, b, ta, tb } = await pair();
    await waitFor(() => agreed(a, tb) && agreed(b, ta), { what: "agreement" });
    for (let i = 0; i < 200; i++) a.put(`c${i}`, "k", i); // one delta per collection: 200 frames
    await waitFor(() => b.store.collectionNames().length === 200, { what: "200 deltas" });
    const peak = a.engine.core.peers.get(tb.self!)!.window.peak;
    expect(peak).toBe(16);
  });

  it("inbound frames from one peer are handled one at a time, in arrival order", async () => {
    const { a, b, ta, tb, key } = await pair();
    await waitFor(() => agreed(a, tb) && agreed(b, ta), { what: "agreement" });
    const order: string[] = [];
    a.engine.on("change", (_c, recs) => void order.push(...recs.map((r) => r.key)));
    const frames = [];
    for (let i = 0; i < 50; i++) {
      const m = encodeMessage({
        type: "delta",
        collection: "c",
        records: [{ key: `k${i}`, value: i, is_deleted: false, hlc: formatHlc({ wall: 1, counter: 0, node: "b" }) }],
      });
      frames.push(a.engine.receive(tb.self!, sealFrame(key, m)));
    }
    await Promise.all(frames);
    expect(order).toEqual([...Array(50).keys()].map((i) => `k${i}`));
  });
});

describe("the Passnote protocol: sync", () => {
  it("two peers with 2,000 records and 20 differences converge by range reconciliation", async () => {
    const bus = new MemoryBus();
    const key = groupKey();
    const ta = await bus.connect();
    const tb = await bus.connect();
    const a = new PassnotePeer({ transport: ta, key, node: "alice" });
    const b = new PassnotePeer({ transport: tb, key, node: "bob" });
    fillDifferent(a.store, b.store, { common: 2000, differences: 20 });
    a.forceSync();
    await waitFor(() => sameRecords(a.store, b.store), { what: "convergence" });
    expect(a.engine.sent.frames.reconcile ?? 0).toBeGreaterThan(0);
    expect(a.store.size("notes")).toBe(2010);
  });

  it("without recon1 the fallback converges: records older than the peer's watermark that it lacks are shipped, both ways", async () => {
    // Interleaved clocks: each side holds records older than the other's highest HLC that the other lacks.
    const rec = (key: string, wall: number, node: string) => ({
      key,
      value: `${key}@${wall}`,
      is_deleted: false,
      hlc: formatHlc({ wall, counter: 0, node }),
    });
    const sa = new MemoryStore();
    const sb = new MemoryStore();
    for (let i = 0; i < 300; i++) {
      sa.merge("notes", rec(`a${i}`, 1_000 + 20 * i, "alice"));
      sb.merge("notes", rec(`b${i}`, 1_010 + 20 * i, "bob"));
      if (i % 3 === 0) for (const st of [sa, sb]) st.merge("notes", rec(`shared${i}`, 1_005 + 20 * i, "carol"));
    }
    sb.merge("diary", rec("only-bob", 5, "bob")); // and a collection only one side holds
    expect(sa.watermark("notes") < sb.watermark("notes")).toBe(true);
    const { a, b } = await pair({ a: { store: sa }, b: { store: sb, recon: false } });
    await waitFor(() => sameRecords(a.store, b.store) && a.store.size("notes") === 700 && a.get("diary", "only-bob") !== undefined, {
      what: "fallback convergence",
    });
    expect(a.engine.sent.frames.reconcile ?? 0).toBe(0);
    expect(b.engine.sent.frames.reconcile ?? 0).toBe(0);
  });

  it("without recon1, after the full pass a pass ships what changed since (an old record from a third peer), and a refusal brings a full pass", async () => {
    const { a, b, sentA } = await pair({ b: { recon: false } });
    for (let i = 0; i < 50; i++) a.put("notes", `k${i}`, i);
    await waitFor(() => b.store.size("notes") === 50, { what: "first sync" });
    const shippedByA = () => sentA.filter((m) => m.type === "delta").reduce((n, m) => n + (m as { records: unknown[] }).records.length, 0);
    const round = async (done: () => boolean) => {
      a.forceSync();
      b.forceSync();
      await waitFor(done, { what: "a round" });
      await settle([a, b]);
    };
    await round(() => true); // settles whatever the first passes left to say
    // An old record, older than bob's watermark, that alice learnt from elsewhere (not a local write).
    a.store.merge("notes", { key: "from-carol", value: 1, is_deleted: false, hlc: formatHlc({ wall: 5, counter: 0, node: "carol" }) });
    let before = shippedByA();
    await round(() => b.get("notes", "from-carol") === 1);
    expect(shippedByA() - before).toBe(1); // the change alone, not all 51
    // A refused frame: the next pass is a full one (whatever it carried is re-shipped).
    before = shippedByA();
    a.engine.repair();
    await round(() => shippedByA() - before >= 51);
    expect(shippedByA() - before).toBe(51);
  });

  it("without recon1 the peers fall back to shipping records newer than the watermark", async () => {
    const { a, b } = await pair({ b: { recon: false } });
    b.store.merge("notes", { key: "old", value: 1, is_deleted: false, hlc: formatHlc({ wall: 5, counter: 0, node: "x" }) });
    a.forceSync();
    b.forceSync();
    await waitFor(() => a.get("notes", "old") === 1, { what: "fallback" });
    expect(a.engine.sent.frames.reconcile ?? 0).toBe(0);
  });
});
