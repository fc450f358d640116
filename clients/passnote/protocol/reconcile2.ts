// Range reconciliation, capability recon2 (profile; recon1 is the Passnote protocol's, reconcile.ts). Two peers
// that both offer recon2 reconcile with it; any other pair keeps recon1. The fingerprint is the
// protocol's (XOR of SHA-256(key ‖ 0x00 ‖ hlc) truncated to 16 bytes); what changes is how ranges are
// bounded and split, after negentropy (github.com/hoytech/negentropy, protocol v1):
//   - items are ordered by (HLC wall ms, fingerprint), so a bound can fall between two records of
//     the same millisecond and every range of more than one record can be split;
//   - a mismatched range splits into 16 buckets of equal record counts, and when few ranges
//     mismatch, several levels at once (256 buckets) within a budget of fingerprints per reply,
//     so one difference among 10^6 records is found in three round trips;
//   - a small mismatch is answered with the responder's record ids, not its records: the prober
//     ships exactly what the responder lacks and asks (need) for exactly what it lacks itself.
// A reply that would pass its byte or range limit answers everything from that point on with one
// fingerprint of the rest, which the next round splits: an overflow costs a round, never a bulk
// shipment. Wire shape: reconcile2-wire.ts and docs/passnote.md.
import { PASSNOTE_LIMITS as L } from "../../../shared/limits";
import { bytesToHex, equalBytes } from "../../../shared/encoding";
import type { Entry, PassnoteStore } from "./records";
import { ID_BYTES, INFINITE_BOUND, itemBelow, rangeBytes, type Bound, type Range2, type Reconcile2 } from "./reconcile2-wire";

export type { Reconcile2 } from "./reconcile2-wire";

interface Reconcile2Outcome {
  /** Keys of the records to ship to the peer (read from the store, sent as delta frames before the reply). */
  ship: string[];
  /** The reply, or null when every range is settled. */
  reply: Reconcile2 | null;
}

function fingerprintOf(items: readonly Entry[], lo: number, hi: number): Uint8Array {
  const fp = new Uint8Array(ID_BYTES);
  for (let i = lo; i < hi; i++) {
    const x = items[i].fp;
    for (let j = 0; j < ID_BYTES; j++) fp[j] ^= x[j];
  }
  return fp;
}

/** The first index at or after `from` whose item is not below the bound. */
function indexOf(items: readonly Entry[], b: Bound, from: number): number {
  if (b.wall === Number.POSITIVE_INFINITY) return items.length;
  let lo = from;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (itemBelow(items[mid].wall, items[mid].fp, b)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The smallest bound above `prev` and at or below `cur` (two neighbouring items). */
export function boundBetween(prev: Entry, cur: Entry): Bound {
  if (prev.wall !== cur.wall) return { wall: cur.wall, prefix: new Uint8Array(0) };
  let p = 0;
  while (p < ID_BYTES - 1 && prev.fp[p] === cur.fp[p]) p++;
  return { wall: cur.wall, prefix: cur.fp.slice(0, p + 1) };
}

function compareIds(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < ID_BYTES; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

/** Splits items[lo, hi) into `buckets` fingerprint ranges of equal counts (the first ones one smaller). */
function split(items: readonly Entry[], lo: number, hi: number, upper: Bound, buckets: number): Range2[] {
  const n = hi - lo;
  const f = Math.min(buckets, n);
  const out: Range2[] = [];
  for (let i = 0; i < f; i++) {
    const a = lo + Math.floor((i * n) / f);
    const b = lo + Math.floor(((i + 1) * n) / f);
    out.push({
      upper: i === f - 1 ? upper : boundBetween(items[b - 1], items[b]),
      mode: "fingerprint",
      count: b - a,
      fingerprint: fingerprintOf(items, a, b),
    });
  }
  return out;
}

/** The opening probe of a collection: one fingerprint of everything this side holds. */
export function openingProbe2(store: PassnoteStore, collection: string): Reconcile2 {
  const items = store.ordered(collection);
  return {
    type: "reconcile2",
    collection,
    ranges: [{ upper: INFINITE_BOUND, mode: "fingerprint", count: items.length, fingerprint: fingerprintOf(items, 0, items.length) }],
  };
}

/** Levels to split at once: the most that keep `mismatches` × 16^levels within the budget (at least one). */
function levelsFor(mismatches: number): number {
  let k = 1;
  while (mismatches * L.recon2_split ** (k + 1) <= L.recon2_budget) k++;
  return k;
}

/** Buckets for a range of n records: enough levels to reach leaves, no more than `levels`. */
function bucketsFor(n: number, levels: number): number {
  let f = L.recon2_split;
  for (let k = 1; k < levels && f * L.recon2_leaf_ids < n; k++) f *= L.recon2_split;
  return f;
}

/** Answers one reconcile2 message against this side's store. */
export function respondToReconcile2(store: PassnoteStore, msg: Reconcile2): Reconcile2Outcome {
  const items = store.ordered(msg.collection);
  // Where each range falls among this side's items; which fingerprints match; which will split.
  const spans: Array<{ lo: number; hi: number; match: boolean; split: boolean }> = [];
  let from = 0;
  let mismatches = 0;
  for (const r of msg.ranges) {
    const hi = indexOf(items, r.upper, from);
    const match = r.mode === "fingerprint" && r.count === hi - from && equalBytes(r.fingerprint, fingerprintOf(items, from, hi));
    const split = r.mode === "fingerprint" && !match && r.count > 0 && hi - from > L.recon2_leaf_ids;
    if (split) mismatches++;
    spans.push({ lo: from, hi, match, split });
    from = hi;
  }
  const levels = levelsFor(Math.max(1, mismatches));

  const ship: string[] = [];
  const out: Range2[] = [];
  let bytes = 0;
  let prevWall = 0;
  let overflowed = false;
  const RESERVE = 64; // room for the closing fingerprint of the rest
  for (let i = 0; i < msg.ranges.length; i++) {
    const r = msg.ranges[i];
    const { lo, hi } = spans[i];
    let answer: Range2[] = [];
    switch (r.mode) {
      case "skip":
        break;
      case "fingerprint": {
        if (spans[i].match) break;
        if (r.count === 0) {
          for (let j = lo; j < hi; j++) ship.push(items[j].key); // the peer holds nothing here
        } else if (spans[i].split) {
          answer = split(items, lo, hi, r.upper, bucketsFor(hi - lo, levels));
        } else {
          const ids = items.slice(lo, hi).map((e) => e.fp.slice());
          answer = [{ upper: r.upper, mode: "ids", ids: ids.sort(compareIds) }];
        }
        break;
      }
      case "ids": {
        const theirs = new Set(r.ids.map(bytesToHex));
        const mine = new Set<string>();
        for (let j = lo; j < hi; j++) {
          const id = bytesToHex(items[j].fp);
          mine.add(id);
          if (!theirs.has(id)) ship.push(items[j].key);
        }
        const need = r.ids.filter((id) => !mine.has(bytesToHex(id)));
        if (need.length) answer = [{ upper: r.upper, mode: "need", ids: need }];
        break;
      }
      case "need": {
        const wanted = new Set(r.ids.map(bytesToHex));
        for (let j = lo; j < hi; j++) if (wanted.has(bytesToHex(items[j].fp))) ship.push(items[j].key);
        break;
      }
    }
    if (overflowed || !answer.length) continue;
    // Settled ranges between answers travel as one skip (its bound is the answer's lower bound).
    const lower = i > 0 ? msg.ranges[i - 1].upper : undefined;
    const gap: Range2[] = lower && (out.length ? out[out.length - 1].upper !== lower : true) ? [{ upper: lower, mode: "skip" }] : [];
    let size = 0;
    let w = prevWall;
    for (const a of [...gap, ...answer]) {
      size += rangeBytes(w, a);
      if (a.upper.wall !== Number.POSITIVE_INFINITY) w = a.upper.wall;
    }
    if (bytes + size + RESERVE > L.recon2_max_bytes || out.length + gap.length + answer.length + 1 > L.recon2_max_ranges) {
      // Everything from here on goes as one fingerprint of the rest, for the next round to split.
      overflowed = true;
      if (lower) out.push(...gap);
      out.push({
        upper: INFINITE_BOUND,
        mode: "fingerprint",
        count: items.length - lo,
        fingerprint: fingerprintOf(items, lo, items.length),
      });
      continue;
    }
    out.push(...gap, ...answer);
    bytes += size;
    prevWall = w;
  }
  return { ship, reply: out.length ? { type: "reconcile2", collection: msg.collection, ranges: out } : null };
}
