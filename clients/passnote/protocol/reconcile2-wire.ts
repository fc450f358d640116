// The body of the reconcile2 message (tag 0xF0, capability x-edge-relay/recon2; profile, see docs/passnote.md
// "Range reconciliation, recon2"). A message lists ranges in ascending order that tile the item
// space from its start: each range is given by its upper bound only, its lower bound being the
// previous range's upper bound (the first starts at the lowest bound, wall 0 and no prefix). What
// the last range leaves uncovered is settled (skipped).
//
//   body   = collection: str, n× range                   (n ≤ recon2_max_ranges)
//   range  = bound, mode: byte, payload
//   bound  = wall: varint, prefix: bytes (0..16 bytes)
//            wall 0 is infinity (prefix empty, last range only); otherwise wall − previous wall + 1,
//            the previous wall being that of the range before (0 for the first);
//   mode 0 skip         (no payload)                      settled, nothing to say
//        1 fingerprint  count: varint, fingerprint: 16 bytes
//        2 ids          n× id (16 bytes each, ascending)   every id the sender holds in the range
//        3 need         n× id (16 bytes each, ascending)   ids the sender lacks: ship me these
//
// Items are ordered by (HLC wall milliseconds, id), id = the record's 16-byte fingerprint
// SHA-256(key ‖ 0x00 ‖ hlc)[0..16], compared bytewise. An item is below a bound when its wall is
// smaller, or equal with its id's first bytes below the prefix (the prefix compared as if padded
// with zero bytes). Bounds must strictly ascend; anything else is malformed.
import { PASSNOTE_LIMITS as L } from "../../../shared/limits";
import { DecodeError, type Reader, type Writer } from "./codec";

export const ID_BYTES = 16;

/** An item bound: wall time and an id prefix; wall Infinity is past every item. */
export interface Bound {
  wall: number;
  prefix: Uint8Array;
}

const LOWEST_BOUND: Bound = { wall: 0, prefix: new Uint8Array(0) };
export const INFINITE_BOUND: Bound = { wall: Number.POSITIVE_INFINITY, prefix: new Uint8Array(0) };

const RANGE_MODE = { skip: 0, fingerprint: 1, ids: 2, need: 3 } as const;

export type Range2 =
  | { upper: Bound; mode: "skip" }
  | { upper: Bound; mode: "fingerprint"; count: number; fingerprint: Uint8Array }
  | { upper: Bound; mode: "ids"; ids: Uint8Array[] }
  | { upper: Bound; mode: "need"; ids: Uint8Array[] };

export interface Reconcile2 {
  type: "reconcile2";
  collection: string;
  ranges: Range2[];
}

/** Compares two byte strings as if the shorter were padded with zero bytes to the longer's length. */
function comparePadded(a: Uint8Array, b: Uint8Array): number {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x - y;
  }
  return 0;
}

function compareBounds(a: Bound, b: Bound): number {
  if (a.wall !== b.wall) return a.wall < b.wall ? -1 : 1;
  return comparePadded(a.prefix, b.prefix);
}

/** Whether an item (wall, id) lies below a bound. */
export function itemBelow(wall: number, id: Uint8Array, b: Bound): boolean {
  if (wall !== b.wall) return wall < b.wall;
  for (let i = 0; i < b.prefix.length; i++) {
    if (id[i] !== b.prefix[i]) return id[i] < b.prefix[i];
  }
  return false; // the id starts with the prefix: at or above the bound
}

/** Bytes of a varint (for the reply's byte budget). */
function varintBytes(v: number): number {
  let n = 1;
  while (v >= 128) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

/** Encoded bytes of one range, given the wall of the range before it. */
export function rangeBytes(prevWall: number, r: Range2): number {
  const wall = r.upper.wall === Number.POSITIVE_INFINITY ? 1 : varintBytes(r.upper.wall - prevWall + 1);
  let n = wall + varintBytes(r.upper.prefix.length) + r.upper.prefix.length + 1;
  if (r.mode === "fingerprint") n += varintBytes(r.count) + ID_BYTES;
  else if (r.mode === "ids" || r.mode === "need") n += varintBytes(r.ids.length) + r.ids.length * ID_BYTES;
  return n;
}

export function writeReconcile2(w: Writer, m: Reconcile2): void {
  if (m.ranges.length > L.recon2_max_ranges) throw new RangeError("reconcile2 over its range limit");
  w.string(m.collection).varint(m.ranges.length);
  let prevWall = 0;
  for (const r of m.ranges) {
    if (r.upper.wall === Number.POSITIVE_INFINITY) w.varint(0);
    else {
      w.varint(r.upper.wall - prevWall + 1);
      prevWall = r.upper.wall;
    }
    if (r.upper.prefix.length > ID_BYTES) throw new RangeError("bound prefix over 16 bytes");
    w.bytes(r.upper.prefix).byte(RANGE_MODE[r.mode]);
    switch (r.mode) {
      case "skip":
        break;
      case "fingerprint":
        if (r.fingerprint.length !== ID_BYTES) throw new RangeError("fingerprint size");
        w.varint(r.count).raw(r.fingerprint);
        break;
      case "ids":
      case "need":
        if (r.ids.length > L.recon2_max_ids) throw new RangeError("id list over its limit");
        w.varint(r.ids.length);
        for (const id of r.ids) {
          if (id.length !== ID_BYTES) throw new RangeError("id size");
          w.raw(id);
        }
        break;
    }
  }
}

function readIds(r: Reader): Uint8Array[] {
  const n = r.count(L.recon2_max_ids);
  const ids: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    const id = r.raw(ID_BYTES);
    if (i > 0 && comparePadded(ids[i - 1], id) >= 0) throw new DecodeError("ids not ascending");
    ids.push(id);
  }
  return ids;
}

/** Reads a reconcile2 body; throws DecodeError on anything malformed (decodeMessage answers null). */
export function readReconcile2(r: Reader, name: (r: Reader) => string): Reconcile2 {
  const collection = name(r);
  const n = r.count(L.recon2_max_ranges);
  const ranges: Range2[] = [];
  let prev = LOWEST_BOUND;
  for (let i = 0; i < n; i++) {
    if (prev.wall === Number.POSITIVE_INFINITY) throw new DecodeError("range after infinity");
    const delta = r.varint();
    const wall = delta === 0 ? Number.POSITIVE_INFINITY : prev.wall + delta - 1;
    if (wall !== Number.POSITIVE_INFINITY && !Number.isSafeInteger(wall)) throw new DecodeError("wall out of range");
    const prefix = r.bytes(ID_BYTES);
    if (delta === 0 && prefix.length) throw new DecodeError("infinity with a prefix");
    const upper = { wall, prefix };
    if (compareBounds(upper, prev) <= 0) throw new DecodeError("bounds not ascending");
    const mode = r.byte();
    switch (mode) {
      case RANGE_MODE.skip:
        ranges.push({ upper, mode: "skip" });
        break;
      case RANGE_MODE.fingerprint: {
        const count = r.varint();
        ranges.push({ upper, mode: "fingerprint", count, fingerprint: r.raw(ID_BYTES) });
        break;
      }
      case RANGE_MODE.ids:
        ranges.push({ upper, mode: "ids", ids: readIds(r) });
        break;
      case RANGE_MODE.need:
        ranges.push({ upper, mode: "need", ids: readIds(r) });
        break;
      default:
        throw new DecodeError(`unknown range mode ${mode}`);
    }
    prev = upper;
  }
  return { type: "reconcile2", collection, ranges };
}
