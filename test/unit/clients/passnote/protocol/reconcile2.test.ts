// recon2 (profile, docs/passnote.md "Range reconciliation, recon2"): the responder's rules, the
// fixed test vector, convergence with data, and round trips and bytes as counted values.
import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../../../../clients/passnote/protocol/records";
import { openingProbe, respondToReconcile, type Reconcile } from "../../../../../clients/passnote/protocol/reconcile";
import { boundBetween, openingProbe2, respondToReconcile2, type Reconcile2 } from "../../../../../clients/passnote/protocol/reconcile2";
import { INFINITE_BOUND, type Range2 } from "../../../../../clients/passnote/protocol/reconcile2-wire";
import { formatHlc } from "../../../../../clients/passnote/protocol/hlc";
import { decodeMessage, encodeMessage, type WireRecord } from "../../../../../clients/passnote/protocol/wire";
import { PASSNOTE_LIMITS as L } from "../../../../../shared/limits";
import { bytesToHex, hexToBytes } from "../../../../../shared/encoding";
import { fillDifferent, sameRecords } from "../../../../helpers/passnote";

const C = "notes";
const hlc = (wall: number, node = "a") => formatHlc({ wall, counter: 0, node });
const rec = (key: string, wall: number, node = "a"): WireRecord => ({ key, value: key, is_deleted: false, hlc: hlc(wall, node) });
const store = (records: WireRecord[], collection = C) => {
  const s = new MemoryStore();
  for (const r of records) s.merge(collection, r);
  return s;
};
/** Encoded bytes of records sent as deltas of at most 500. */
function deltaBytes(records: WireRecord[], collection = C): number {
  let n = 0;
  for (let i = 0; i < records.length; i += L.delta_max_records) {
    n += encodeMessage({ type: "delta", collection, records: records.slice(i, i + L.delta_max_records) }).length;
  }
  return n;
}
const modes = (m: Reconcile2 | null) => m?.ranges.map((r) => r.mode) ?? [];

/**
 * Runs a reconciliation between two stores in memory, each side merging the other's records
 * before answering (as deltas travel before the reply). A flight is one side's turn with
 * something to send; a round trip is two flights.
 */
function exchange(a: MemoryStore, b: MemoryStore, capability: "recon1" | "recon2", collection = C) {
  const sides = [a, b];
  let msg: Reconcile | Reconcile2 | null = capability === "recon2" ? openingProbe2(a, collection) : openingProbe(a, collection);
  let flights = 1;
  let shipped = 0;
  let bytes = encodeMessage(msg).length;
  let turn = 1;
  while (msg) {
    const answer: { ship: string[]; reply: Reconcile | Reconcile2 | null } =
      msg.type === "reconcile2" ? respondToReconcile2(sides[turn], msg) : respondToReconcile(sides[turn], msg);
    // The engine ships by key: what it sends is read from the store.
    const out = { ship: answer.ship.map((k) => sides[turn].get(collection, k)!), reply: answer.reply };
    if (out.ship.length || out.reply) flights++;
    for (const r of out.ship) sides[1 - turn].merge(collection, r);
    shipped += out.ship.length;
    bytes += deltaBytes(out.ship, collection);
    if (out.reply) bytes += encodeMessage(out.reply).length;
    msg = out.reply;
    turn = 1 - turn;
  }
  return { flights, roundTrips: Math.ceil(flights / 2), shipped, bytes };
}

describe("recon2: the responder's rules", () => {
  it("equal sets exchange only the top fingerprint: the responder sends nothing", () => {
    const a = new MemoryStore();
    const b = new MemoryStore();
    fillDifferent(a, b, { common: 1000, differences: 0 });
    const open = openingProbe2(a, C);
    expect(open.ranges).toEqual([{ upper: INFINITE_BOUND, mode: "fingerprint", count: 1000, fingerprint: a.summary(C).fingerprint }]);
    expect(respondToReconcile2(b, open)).toEqual({ ship: [], reply: null });
    expect(exchange(a, b, "recon2")).toMatchObject({ flights: 1, shipped: 0 });
  });

  it("a peer that holds nothing in a range is shipped the responder's records there, with nothing to reply", () => {
    const b = store([rec("x", 5), rec("y", 6)]);
    const out = respondToReconcile2(b, openingProbe2(new MemoryStore(), C));
    expect(out.ship).toEqual(["x", "y"]);
    expect(out.reply).toBeNull();
  });

  it("small mismatch (at most 32 records on the responder's side): answered with the responder's ids, ascending", () => {
    const b = store(Array.from({ length: 32 }, (_, i) => rec(`k${i}`, i)));
    const a = store(Array.from({ length: 500 }, (_, i) => rec(`k${i}`, i)));
    const out = respondToReconcile2(b, openingProbe2(a, C));
    expect(out.ship).toEqual([]);
    const [range] = out.reply!.ranges as Array<Extract<Range2, { mode: "ids" }>>;
    expect(range.mode).toBe("ids");
    expect(range.upper).toEqual(INFINITE_BOUND);
    const ids = range.ids.map(bytesToHex);
    expect(ids).toEqual(
      b
        .ordered(C)
        .map((e) => bytesToHex(e.fp))
        .sort(),
    );
  });

  it("ids: the prober ships exactly what the responder lacks and asks (need) for exactly what it lacks itself", () => {
    const a = store([rec("shared", 1), rec("only-a", 2)]);
    const b = store([rec("shared", 1), rec("only-b", 3)]);
    const ids = respondToReconcile2(b, openingProbe2(a, C)).reply!;
    expect(modes(ids)).toEqual(["ids"]);
    const out = respondToReconcile2(a, ids);
    expect(out.ship).toEqual(["only-a"]);
    expect(out.reply!.ranges).toEqual([{ upper: INFINITE_BOUND, mode: "need", ids: [b.ordered(C).find((e) => e.key === "only-b")!.fp] }]);
    const last = respondToReconcile2(b, out.reply!);
    expect(last.ship).toEqual(["only-b"]);
    expect(last.reply).toBeNull();
  });

  it("large mismatch: split into 16 buckets of equal counts per level; a lone mismatch splits two levels at once (256)", () => {
    const b = store(Array.from({ length: 4096 }, (_, i) => rec(`k${i}`, 1000 + i)));
    const a = store(Array.from({ length: 4095 }, (_, i) => rec(`k${i}`, 1000 + i)));
    const lone = respondToReconcile2(b, openingProbe2(a, C)).reply!;
    expect(lone.ranges).toHaveLength(256);
    expect(lone.ranges.every((r) => r.mode === "fingerprint" && r.count === 16)).toBe(true);
    // Two mismatches of 2048 records each (2 × 256 fingerprints within the budget of 1024): two levels each.
    const two = respondToReconcile2(b, {
      type: "reconcile2",
      collection: C,
      ranges: [
        { upper: { wall: 1000 + 2048, prefix: new Uint8Array(0) }, mode: "fingerprint", count: 1, fingerprint: new Uint8Array(16) },
        { upper: INFINITE_BOUND, mode: "fingerprint", count: 1, fingerprint: new Uint8Array(16) },
      ],
    }).reply!;
    expect(two.ranges).toHaveLength(512);
    // Five mismatches (5 × 256 > 1024): one level, 16 buckets each.
    const ranges: Range2[] = [];
    for (let j = 1; j <= 5; j++) {
      const upper = j === 5 ? INFINITE_BOUND : { wall: 1000 + j * 800, prefix: new Uint8Array(0) };
      ranges.push({ upper, mode: "fingerprint", count: 1, fingerprint: new Uint8Array(16) });
    }
    const five = respondToReconcile2(b, { type: "reconcile2", collection: C, ranges }).reply!;
    expect(five.ranges).toHaveLength(5 * L.recon2_split);
  });

  it("a bound falls between two records of the same millisecond: the shortest id prefix that separates them", () => {
    const s = store(Array.from({ length: 64 }, (_, i) => rec(`same${i}`, 7)));
    const items = s.ordered(C);
    for (let i = 1; i < items.length; i++) {
      const b = boundBetween(items[i - 1], items[i]);
      expect(b.wall).toBe(7);
      expect(bytesToHex(items[i].fp).startsWith(bytesToHex(b.prefix))).toBe(true);
      expect(bytesToHex(items[i - 1].fp) < bytesToHex(b.prefix)).toBe(true);
    }
    // 64 records in one millisecond still split (recon1 could only ship them as a leaf).
    const reply = respondToReconcile2(s, openingProbe2(store([rec("same0", 7)]), C)).reply!;
    expect(reply.ranges.length).toBeGreaterThan(1);
  });

  it("overflow: a reply that would pass 256 KiB answers everything from there on with one fingerprint of the rest", () => {
    // 1,000 small mismatches, each answered with an id list of 20 ids (about 330 bytes): 330 KB.
    const b = store(Array.from({ length: 20_000 }, (_, i) => rec(`k${i}`, 1 + i)));
    const ranges: Range2[] = Array.from({ length: 1000 }, (_, j) => ({
      upper: j === 999 ? INFINITE_BOUND : { wall: 1 + (j + 1) * 20, prefix: new Uint8Array(0) },
      mode: "fingerprint" as const,
      count: 1,
      fingerprint: new Uint8Array(16),
    }));
    const reply = respondToReconcile2(b, { type: "reconcile2", collection: C, ranges }).reply!;
    const last = reply.ranges[reply.ranges.length - 1];
    expect(last).toMatchObject({ upper: INFINITE_BOUND, mode: "fingerprint" });
    const answered = reply.ranges.filter((r) => r.mode === "ids").length;
    expect(answered).toBeGreaterThan(100);
    expect(answered).toBeLessThan(1000);
    expect(last.mode === "fingerprint" && last.count).toBe(20_000 - answered * 20);
    expect(encodeMessage(reply).length).toBeLessThanOrEqual(L.recon2_max_bytes);
  });
});

// The exchange of a fixed dataset, frame by frame (docs/passnote.md gives the same frames).
// B holds 40 records k00..k39 (value = key, node "b", counter 0) at wall 1700000000000 + 1000·i
// for i < 30 and 1700000030000 for k30..k39; A holds the same but k07 and k35, plus "a1" (node
// "a") at 1700000050000. Collection "v". A opens.
const VECTOR = {
  open: "c702f001760100000127413fdbd522de58be8ea73a1fdd5c01a3",
  split:
    "c702f0017610d1df95ffbc31000102c00a62d449f2dbdd1b44996a3d1456d9b91700010390ac5817cd4506b53b47cd911e4fd6eed10f00010264437bdac5e40cc82c60fb7a86663dceb917000103865115c00a3de12d86bb32312954e94fd10f000102f53a5261cbba8beb6086829b2f6510ccb9170001031b966a2875cb7f7870fa2b54bd24728bd10f00010259df6155bce3a4dfeee8f23fb3438d3db9170001031b2558634c8d6143739f71017a4e0fb2d10f0001020fce06c7abd2ce92651f8fc9bad9e9a2b917000103c86e5f556bcae4a878581e040c929145d10f0001024a1df27a1866a6df70b89070473e0026b9170001038142115e30095fe4150b163c986f725b01015f010208fc5717700095ee0b1f2640637ebf170101880103a1732e76c6e5fdad273f6d9eac8276190101c9010220b0f38642c7952b8b0bd99df2031fe700000103eed0f233a155f89bf661c6bd0b5a885a",
  ids: "c702f0017604d98696ffbc310000b91700020227fe9ea157ffa8c54483bc224915a4a296961e2697e23d8952769843d4603768a19c0101c90000000203c92575dabaa0123995c9e806ce009122cdd8fd3de49947bf0764f31fc706f31be9d9a382afe356b2544805d5e3bb7112",
  need: "c702f0017602b1ba97ffbc3101c90000000301e9d9a382afe356b2544805d5e3bb7112",
};

describe("recon2: fixed test vector", () => {
  it("the vector dataset's exchange is byte for byte the documented frames", () => {
    const T = 1_700_000_000_000;
    const a = new MemoryStore();
    const b = new MemoryStore();
    for (let i = 0; i < 40; i++) {
      const r = rec(`k${String(i).padStart(2, "0")}`, T + (i < 30 ? i * 1000 : 30_000), "b");
      b.merge("v", r);
      if (i !== 7 && i !== 35) a.merge("v", r);
    }
    a.merge("v", rec("a1", T + 50_000, "a"));
    const hexOut = (m: Reconcile2 | null) => (m ? bytesToHex(encodeMessage(m)) : null);
    const hexIn = (h: string) => decodeMessage(hexToBytes(h)) as Reconcile2;

    expect(hexOut(openingProbe2(a, "v"))).toBe(VECTOR.open);
    const s1 = respondToReconcile2(b, hexIn(VECTOR.open));
    expect([s1.ship, hexOut(s1.reply)]).toEqual([[], VECTOR.split]);
    const s2 = respondToReconcile2(a, hexIn(VECTOR.split));
    expect([s2.ship, hexOut(s2.reply)]).toEqual([[], VECTOR.ids]);
    const s3 = respondToReconcile2(b, hexIn(VECTOR.ids));
    expect([s3.ship, hexOut(s3.reply)]).toEqual([["k07", "k35"], VECTOR.need]);
    for (const k of s3.ship) a.merge("v", b.get("v", k)!);
    const s4 = respondToReconcile2(a, hexIn(VECTOR.need));
    expect([s4.ship, s4.reply]).toEqual([["a1"], null]);
    for (const k of s4.ship) b.merge("v", a.get("v", k)!);
    expect(sameRecords(a, b, "v")).toBe(true);
  });
});

describe("recon2: convergence with data", () => {
  it("empty against full, either side opening: everything arrives in at most two flights", () => {
    for (const emptyOpens of [true, false]) {
      const full = new MemoryStore();
      fillDifferent(full, new MemoryStore(), { common: 2000, differences: 0 });
      const empty = new MemoryStore();
      const run = emptyOpens ? exchange(empty, full, "recon2") : exchange(full, empty, "recon2");
      expect(sameRecords(empty, full)).toBe(true);
      expect(run).toMatchObject({ shipped: 2000 });
      expect(run.flights).toBe(emptyOpens ? 2 : 3);
    }
  });

  it("scattered differences (edits and new records on both sides) converge, then a second run is one fingerprint", () => {
    const a = new MemoryStore();
    const b = new MemoryStore();
    fillDifferent(a, b, { common: 3_000, differences: 30 });
    const run = exchange(a, b, "recon2");
    expect(sameRecords(a, b)).toBe(true);
    expect(run.shipped).toBeLessThan(60);
    expect(exchange(a, b, "recon2")).toMatchObject({ flights: 1, shipped: 0 });
  });

  it("deletions travel like any record: a newer tombstone wins on both sides", () => {
    const a = new MemoryStore();
    const b = new MemoryStore();
    fillDifferent(a, b, { common: 3000, differences: 0 });
    const victims = ["k5", "k1500", "k2999"];
    for (const key of victims) a.merge(C, { key, value: null, is_deleted: true, hlc: hlc(Date.UTC(2026, 11, 1), "a") });
    b.merge(C, { key: "k10", value: null, is_deleted: true, hlc: hlc(Date.UTC(2026, 11, 1), "b") });
    exchange(b, a, "recon2");
    expect(sameRecords(a, b)).toBe(true);
    for (const key of [...victims, "k10"]) expect([a.get(C, key)!.is_deleted, b.get(C, key)!.is_deleted]).toEqual([true, true]);
  });

  it("many records in one millisecond converge (bounds split inside the millisecond)", () => {
    const a = store(Array.from({ length: 3000 }, (_, i) => rec(`k${i}`, 42)));
    const b = store(Array.from({ length: 3000 }, (_, i) => rec(`k${i}`, 42)).filter((_, i) => i % 300 !== 0));
    b.merge(C, rec("extra", 42, "b"));
    const run = exchange(a, b, "recon2");
    expect(sameRecords(a, b)).toBe(true);
    expect(run.shipped).toBe(11);
  });
});

describe("recon2: round trips and bytes (counted, not timed)", () => {
  it("one difference among 5,000 records: recon2 in 3 round trips, recon1 in 6", () => {
    const counts = (["recon2", "recon1"] as const).map((cap) => {
      const a = new MemoryStore();
      const b = new MemoryStore();
      fillDifferent(a, b, { common: 5_000, differences: 1 });
      const run = exchange(a, b, cap);
      expect(sameRecords(a, b)).toBe(true);
      return run.roundTrips;
    });
    expect(counts).toEqual([3, 6]);
  });

  it("scattered differences at one in a thousand (5 among 5,000 records): recon2 ships under 3% of everything, less than recon1", () => {
    const shipAll = (s: MemoryStore) => deltaBytes(s.all(C));
    const ratios = (["recon2", "recon1"] as const).map((cap) => {
      const a = new MemoryStore();
      const b = new MemoryStore();
      fillDifferent(a, b, { common: 5_000, differences: 5 });
      const all = shipAll(a) + shipAll(b);
      const run = exchange(a, b, cap);
      expect(sameRecords(a, b)).toBe(true);
      return run.bytes / all;
    });
    expect(ratios[0]).toBeLessThan(0.03);
    expect(ratios[1]).toBeGreaterThan(ratios[0]);
  });
});
