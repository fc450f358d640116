// Range reconciliation (the Passnote protocol, "Reconciliation exchange", capability recon1). One side probes
// a collection with the fingerprint of everything it holds; for each probe the responder compares
// its own fingerprint of the same range:
//   match            settled, nothing sent;
//   small mismatch   (at most 32 records on either side, or depth 24): a leaf. The responder ships
//                    its records for the range and asks for the peer's;
//   large mismatch   split at the time midpoint of the responder's data, probe back one level deeper.
// A reply carries at most 64 probes; overflow ranges ship as leaves. Ranges are [start, end) in
// HLC wall milliseconds (profile). Shipping twice is harmless: merging is idempotent.
import { PASSNOTE_LIMITS as L } from "../../../shared/limits";
import { equalBytes } from "../../../shared/encoding";
import { firstAtOrAfter } from "./record-index";
import { FULL_RANGE, type PassnoteStore } from "./records";
import type { MessageOf, Probe, Range } from "./wire";

export type Reconcile = MessageOf<"reconcile">;

interface ReconcileOutcome {
  /** Keys of the records to ship to the peer (read from the store, sent as delta frames before the reply). */
  ship: string[];
  /** The reply, or null when every range is settled. */
  reply: Reconcile | null;
}

function probeOf(store: PassnoteStore, collection: string, range: Range, depth: number): Probe {
  const s = store.summary(collection, range);
  return { ...range, depth, count: s.count, fingerprint: s.fingerprint };
}

/** The opening probe of a collection: everything this side holds. */
export function openingProbe(store: PassnoteStore, collection: string): Reconcile {
  return { type: "reconcile", collection, probes: [probeOf(store, collection, FULL_RANGE, 0)], requests: [] };
}

/** Answers one reconcile message against this side's store. */
export function respondToReconcile(store: PassnoteStore, msg: Reconcile): ReconcileOutcome {
  const { collection } = msg;
  const shipRanges: Range[] = [...msg.requests];
  const requests: Range[] = [];
  const subProbes: Probe[] = [];
  const leaf = (p: Probe | Range, peerCount: number) => {
    shipRanges.push({ start: p.start, end: p.end });
    if (peerCount > 0) requests.push({ start: p.start, end: p.end });
  };

  for (const p of msg.probes) {
    const mine = store.summary(collection, p);
    if (mine.count === p.count && equalBytes(mine.fingerprint, p.fingerprint)) continue; // match
    const small = mine.count <= L.recon_leaf_records || p.count <= L.recon_leaf_records || p.depth >= L.recon_max_depth;
    if (small || mine.minWall === undefined || mine.minWall === mine.maxWall) {
      leaf(p, p.count);
      continue;
    }
    const mid = Math.floor((mine.minWall + mine.maxWall!) / 2) + 1; // both halves hold some of my data
    for (const half of [
      { start: p.start, end: mid },
      { start: mid, end: p.end },
    ]) {
      subProbes.push(probeOf(store, collection, half, p.depth + 1));
    }
  }

  const probes = subProbes.slice(0, L.recon_max_probes);
  // Overflow ranges ship as leaves; the peer's count there is unknown, so ask for its records too.
  for (const p of subProbes.slice(L.recon_max_probes)) leaf(p, 1);

  const ship: string[] = [];
  const seen = new Set<string>();
  const items = shipRanges.length ? store.ordered(collection) : [];
  for (const r of shipRanges) {
    for (let i = firstAtOrAfter(items, r.start); i < items.length && items[i].wall < r.end; i++) {
      if (seen.has(items[i].key)) continue;
      seen.add(items[i].key);
      ship.push(items[i].key);
    }
  }
  const reply: Reconcile | null =
    probes.length || requests.length ? { type: "reconcile", collection, probes, requests: requests.slice(0, L.recon_max_requests) } : null;
  return { ship, reply };
}
