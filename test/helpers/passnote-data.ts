// Passnote datasets with a known number of differences, for tests and bench/reconcile.ts (this
// module imports nothing from vitest, so it runs outside the test runner too).
import { formatHlc } from "../../clients/passnote/protocol/hlc";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8Encode } from "../../shared/encoding";
import type { PassnoteStore } from "../../clients/passnote/protocol/records";

export interface Dataset {
  /** Records both sides hold. */
  common: number;
  /** Differences: records that only one side holds, or holds in a newer version. */
  differences: number;
}

/**
 * Fills two stores with `common` shared records spread over 30 days, then gives each side half of
 * the differences: a newer version of an existing record on one side, or a record only it has.
 */
export function fillDifferent(a: PassnoteStore, b: PassnoteStore, { common, differences }: Dataset, collection = "notes"): void {
  const t0 = Date.UTC(2026, 9, 1);
  const span = 30 * 86_400_000;
  for (let i = 0; i < common; i++) {
    const hlc = formatHlc({ wall: t0 + Math.floor((i * span) / common), counter: 0, node: "seed" });
    const rec = { key: `k${i}`, value: { title: `note ${i}`, body: "x".repeat(20), n: i }, is_deleted: false, hlc };
    a.merge(collection, rec);
    b.merge(collection, rec);
  }
  for (let d = 0; d < differences; d++) {
    const side = d % 2 === 0 ? a : b;
    const wall = t0 + span + d * 1000;
    const edit = d % 4 < 2; // half are edits of an existing record, half are new records
    const key = edit ? `k${Math.floor((d * 7919) % common)}` : `new${d}`;
    side.merge(collection, {
      key,
      value: { title: `changed ${d}` },
      is_deleted: d % 10 === 9,
      hlc: formatHlc({ wall, counter: 0, node: d % 2 ? "b" : "a" }),
    });
  }
}

/** Whether two stores hold exactly the same records in a collection. */
export function sameRecords(a: PassnoteStore, b: PassnoteStore, collection = "notes"): boolean {
  const sa = a.summary(collection);
  const sb = b.summary(collection);
  return sa.count === sb.count && sa.fingerprint.every((x, i) => x === sb.fingerprint[i]);
}

/** A digest of a collection's records (key, HLC, value), order-independent: equal on two stores that hold the same. */
export function digest(store: PassnoteStore, collection = "notes"): string {
  const lines = store
    .all(collection)
    .map((r) => `${r.key}\u0000${r.hlc}\u0000${JSON.stringify(r.value)}`)
    .sort();
  return bytesToHex(sha256(utf8Encode(lines.join("\n"))));
}
