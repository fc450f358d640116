// The index of one collection of a Passnote store (records.ts): its records by key, and its
// orders by HLC wall time (range queries, recon1) and by (wall, fingerprint) (recon2's items).
import { compareHlc, hlcWall } from "./hlc";
import type { Range, WireRecord } from "./wire";
import { FINGERPRINT_BYTES } from "./wire";

/**
 * A stored record in the index: its key, HLC, wall time and fingerprint (recon2's item id), and the
 * record itself where the store keeps bodies in memory (a store that reads them from its database
 * on demand leaves it out: MemoryStore.body).
 */
export interface Entry {
  key: string;
  hlc: string;
  record?: WireRecord;
  wall: number;
  fp: Uint8Array;
  /** The store's sequence number when this record was stored: local arrival order, not HLC order. */
  seq: number;
}

/** One collection: records by key, and an index by HLC wall time for range queries. */
export class Collection {
  /** Records by key; undefined until first asked for after fill() (then `filled` holds them). */
  private keyed: Map<string, Entry> | undefined = new Map();
  /** The entries fill() made, while the map by key is not built yet. */
  private filled: Entry[] = [];
  private sorted: Entry[] = [];
  private dirty = false;
  private ordered: Entry[] = [];
  private orderedDirty = false;
  watermark = "";

  /** The records by key, built on the first lookup after a store opened (opening needs none). */
  get byKey(): Map<string, Entry> {
    if (!this.keyed) {
      const m = new Map<string, Entry>();
      for (const e of this.filled) m.set(e.key, e);
      this.keyed = m;
      this.filled = [];
    }
    return this.keyed;
  }

  get size(): number {
    return this.keyed ? this.keyed.size : this.filled.length;
  }

  /** Every entry, in no particular order (without building the map by key). */
  entries(): Iterable<Entry> {
    return this.keyed ? this.keyed.values() : this.filled;
  }

  put(key: string, hlc: string, record: WireRecord | undefined, seq: number, fp: Uint8Array): void {
    this.byKey.set(key, { key, hlc, record, wall: hlcWall(hlc), fp, seq });
    if (compareHlc(hlc, this.watermark) > 0) this.watermark = hlc;
    this.dirty = true;
    this.orderedDirty = true;
  }

  /**
   * Fills an empty collection from columns (a store opening): the i-th key, HLC and 16 bytes of
   * `fps` are one record's; sequence numbers from `seq` + 1 on. One pass, no comparison per record
   * beyond the watermark's; the order and the map by key are made when first asked for.
   */
  fill(keys: readonly string[], hlcs: readonly string[], fps: Uint8Array, seq: number): void {
    const filled = new Array<Entry>(keys.length);
    let top = this.watermark;
    for (let i = 0; i < keys.length; i++) {
      const hlc = hlcs[i];
      filled[i] = {
        key: keys[i],
        hlc,
        record: undefined,
        wall: hlcWall(hlc),
        fp: fps.subarray(i * FINGERPRINT_BYTES, (i + 1) * FINGERPRINT_BYTES),
        seq: seq + i + 1,
      };
      if (compareHlc(hlc, top) > 0) top = hlc;
    }
    this.keyed = undefined;
    this.filled = filled;
    this.watermark = top;
    this.dirty = true;
    this.orderedDirty = true;
  }

  private index(): Entry[] {
    if (this.dirty) {
      this.sorted = [...this.entries()].sort((a, b) => a.wall - b.wall);
      this.dirty = false;
    }
    return this.sorted;
  }

  /** Entries ordered by (wall, fingerprint bytewise): recon2's item order. */
  byWallAndId(): Entry[] {
    if (this.orderedDirty) {
      const a = [...this.index()];
      // The wall index is sorted; only runs of equal wall times need ordering by fingerprint.
      for (let i = 0; i < a.length; ) {
        let j = i + 1;
        while (j < a.length && a[j].wall === a[i].wall) j++;
        if (j - i > 1) {
          const run = a.slice(i, j).sort((x, y) => compareBytes(x.fp, y.fp));
          for (let k = i; k < j; k++) a[k] = run[k - i];
        }
        i = j;
      }
      this.ordered = a;
      this.orderedDirty = false;
    }
    return this.ordered;
  }

  /** Entries with start <= wall < end. */
  slice(range: Range): Entry[] {
    const idx = this.index();
    return idx.slice(firstAtOrAfter(idx, range.start), firstAtOrAfter(idx, range.end));
  }
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < a.length && i < b.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

/** The first index of wall-ordered entries whose wall time is at least `wall` (binary search). */
export function firstAtOrAfter(a: readonly Entry[], wall: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid].wall < wall) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
