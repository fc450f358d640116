// The Passnote protocol, "Reconciliation exchange": fingerprints, leaves, splits at the time midpoint of the
// responder's data, the 64-probe fan-out cap, and convergence with idempotent merging.
import { describe, expect, it } from "vitest";
import { sha256 } from "@noble/hashes/sha2.js";
import { MemoryStore, recordFingerprint, FULL_RANGE } from "../../../../../clients/passnote/protocol/records";
import { openingProbe, respondToReconcile, type Reconcile } from "../../../../../clients/passnote/protocol/reconcile";
import { formatHlc } from "../../../../../clients/passnote/protocol/hlc";
import { PASSNOTE_LIMITS } from "../../../../../shared/limits";
import { concatBytes, utf8Encode } from "../../../../../shared/encoding";
import { fillDifferent, sameRecords } from "../../../../helpers/passnote";

const hlc = (wall: number, node = "a") => formatHlc({ wall, counter: 0, node });
const rec = (key: string, wall: number, node = "a") => ({ key, value: key, is_deleted: false, hlc: hlc(wall, node) });

/** Runs a reconciliation between two stores in memory; returns the number of reconcile messages. */
function exchange(a: MemoryStore, b: MemoryStore, collection = "notes") {
  let msg: Reconcile | null = openingProbe(a, collection);
  let [from, to] = [a, b];
  let messages = 1;
  let shipped = 0;
  while (msg) {
    const out = respondToReconcile(to, msg);
    for (const k of out.ship) from.merge(collection, to.get(collection, k)!);
    shipped += out.ship.length;
    msg = out.reply;
    if (msg) messages++;
    [from, to] = [to, from];
  }
  return { messages, shipped };
}

describe("the Passnote protocol: fingerprints", () => {
  it("a record's fingerprint is SHA-256(key ‖ 0x00 ‖ hlc) truncated to 16 bytes", () => {
    const expected = sha256(concatBytes(utf8Encode("k1"), Uint8Array.of(0), utf8Encode(hlc(5)))).subarray(0, 16);
    expect(recordFingerprint("k1", hlc(5))).toEqual(expected);
  });

  it("a range fingerprint is the XOR of its records': order-independent and splittable", () => {
    const s1 = new MemoryStore();
    const s2 = new MemoryStore();
    const recs = [rec("a", 1), rec("b", 2), rec("c", 3)];
    for (const r of recs) s1.merge("c", r);
    for (const r of [...recs].reverse()) s2.merge("c", r);
    expect(s1.summary("c").fingerprint).toEqual(s2.summary("c").fingerprint);
    const left = s1.summary("c", { start: 0, end: 2 }).fingerprint;
    const right = s1.summary("c", { start: 2, end: 10 }).fingerprint;
    expect(left.map((x, i) => x ^ right[i])).toEqual(s1.summary("c").fingerprint);
  });
});

describe("the Passnote protocol: responder rules", () => {
  it("match: the range is settled and nothing is sent", () => {
    const a = new MemoryStore();
    const b = new MemoryStore();
    fillDifferent(a, b, { common: 100, differences: 0 });
    expect(respondToReconcile(b, openingProbe(a, "notes"))).toEqual({ ship: [], reply: null });
  });

  it("small mismatch (at most 32 records on either side): a leaf that ships the responder's records and asks for the peer's", () => {
    const a = new MemoryStore();
    const b = new MemoryStore();
    for (let i = 0; i < 32; i++) a.merge("c", rec(`k${i}`, i));
    for (let i = 0; i < 500; i++) b.merge("c", rec(`k${i}`, i));
    const out = respondToReconcile(b, openingProbe(a, "c"));
    expect(out.ship).toHaveLength(500);
    expect(out.reply).toEqual({ type: "reconcile", collection: "c", probes: [], requests: [FULL_RANGE] });
  });

  it("large mismatch: split at the time midpoint of the responder's data, probed back one level deeper", () => {
    const a = new MemoryStore();
    const b = new MemoryStore();
    for (let i = 0; i < 100; i++) b.merge("c", rec(`k${i}`, 1000 + i * 10)); // walls 1000..1990
    for (let i = 0; i < 99; i++) a.merge("c", rec(`k${i}`, 1000 + i * 10));
    const out = respondToReconcile(b, openingProbe(a, "c"));
    expect(out.ship).toEqual([]);
    const mid = Math.floor((1000 + 1990) / 2) + 1;
    expect(out.reply!.probes.map((p) => [p.start, p.end, p.depth, p.count])).toEqual([
      [0, mid, 1, 50],
      [mid, FULL_RANGE.end, 1, 50],
    ]);
  });

  it("depth cap 24: a probe at depth 24 is a leaf whatever its size", () => {
    const a = new MemoryStore();
    const b = new MemoryStore();
    for (let i = 0; i < 100; i++) b.merge("c", rec(`k${i}`, i));
    const probe = { ...openingProbe(a, "c").probes[0], depth: PASSNOTE_LIMITS.recon_max_depth, count: 1000 };
    const out = respondToReconcile(b, { type: "reconcile", collection: "c", probes: [probe], requests: [] });
    expect(out.ship).toHaveLength(100);
    expect(out.reply!.probes).toEqual([]);
  });

  it("fan-out cap: at most 64 probes per reply, overflow ranges ship as leaves", () => {
    const b = new MemoryStore();
    for (let i = 0; i < 64 * 200; i++) b.merge("c", rec(`k${i}`, i));
    const probes = [];
    for (let j = 0; j < 64; j++) probes.push({ start: j * 200, end: (j + 1) * 200, depth: 3, count: 100, fingerprint: new Uint8Array(16) });
    const out = respondToReconcile(b, { type: "reconcile", collection: "c", probes, requests: [] });
    expect(out.reply!.probes).toHaveLength(64);
    expect(out.reply!.requests).toHaveLength(64); // the other 64 halves are leaves
    expect(out.ship).toHaveLength(64 * 100);
  });
});

describe("the Passnote protocol: the exchange converges; merging is idempotent", () => {
  it("10,000 records with 50 differences converge, with few messages and few records shipped", () => {
    const a = new MemoryStore();
    const b = new MemoryStore();
    fillDifferent(a, b, { common: 10_000, differences: 50 });
    expect(sameRecords(a, b)).toBe(false);
    const { messages, shipped } = exchange(a, b);
    expect(sameRecords(a, b)).toBe(true);
    expect(messages).toBeLessThan(30);
    expect(shipped).toBeLessThan(10_000);
    // A second run finds everything settled at once.
    expect(exchange(a, b)).toEqual({ messages: 1, shipped: 0 });
  });

  it("merging the same records twice changes nothing (last writer wins by HLC)", () => {
    const s = new MemoryStore();
    expect(s.merge("c", rec("k", 5, "b"))).toBe(true);
    expect(s.merge("c", rec("k", 5, "b"))).toBe(false);
    expect(s.merge("c", rec("k", 4, "z"))).toBe(false);
    expect(s.merge("c", rec("k", 5, "c"))).toBe(true);
    expect(s.get("c", "k")!.hlc).toBe(hlc(5, "c"));
  });
});
