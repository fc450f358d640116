// Range reconciliation (shared/passnote/reconcile.ts), pure, in this process: two stores of N
// records that differ in d, one side opening with its probe, each side answering the other's
// reconcile message (and shipping the records of its leaves as deltas, which the other side merges
// before it answers) until a side has nothing left to ask. Counted per side: the reconcile and
// delta messages it sends and their bytes on the wire (encoded frame + XChaCha20-Poly1305 seal),
// against shipping everything (every record of a side as deltas). A round trip is one message
// each way; the opening probe starts the first.
import { PASSNOTE_LIMITS as L } from "../shared/limits";
import { MemoryStore } from "../shared/passnote/records";
import { openingProbe, respondToReconcile, type Reconcile } from "../shared/passnote/reconcile";
import { NONCE_BYTES, TAG_BYTES } from "../shared/passnote/seal";
import { encodeMessage, type WireRecord } from "../shared/passnote/wire";
import { fillDifferent, sameRecords } from "../test/helpers/passnote-data";

const COLLECTION = "notes";
const SEAL = NONCE_BYTES + TAG_BYTES;

export interface ReconcileResult {
  n: number;
  d: number;
  roundTrips: number;
  /** Bytes each side sent (the larger of the two). */
  bytesPerSide: number;
  /** Bytes each side sends to ship everything it holds (the larger of the two). */
  shipAllBytesPerSide: number;
  /** Records shipped by both sides together. */
  recordsShipped: number;
  ms: number;
}

function deltaBytes(records: readonly WireRecord[]): number {
  let bytes = 0;
  for (let i = 0; i < records.length; i += L.delta_max_records) {
    bytes += encodeMessage({ type: "delta", collection: COLLECTION, records: records.slice(i, i + L.delta_max_records) }).length + SEAL;
  }
  return bytes;
}

export function reconcileRun(n: number, d: number): ReconcileResult {
  const sides = [new MemoryStore(), new MemoryStore()];
  fillDifferent(sides[0], sides[1], { common: n, differences: d }, COLLECTION);
  const shipAll = Math.max(deltaBytes(sides[0].all(COLLECTION)), deltaBytes(sides[1].all(COLLECTION)));
  const sent = [0, 0];
  let shipped = 0;
  let messages = 0;
  const t0 = performance.now();
  let msg: Reconcile | null = openingProbe(sides[0], COLLECTION);
  sent[0] += encodeMessage(msg).length + SEAL;
  messages++;
  let turn = 1; // the side that answers next
  while (msg) {
    const { ship, reply } = respondToReconcile(sides[turn], msg);
    if (ship.length) {
      sent[turn] += deltaBytes(ship);
      shipped += ship.length;
      for (const r of ship) sides[1 - turn].merge(COLLECTION, r);
    }
    if (reply) {
      sent[turn] += encodeMessage(reply).length + SEAL;
      messages++;
    }
    msg = reply;
    turn = 1 - turn;
  }
  const ms = performance.now() - t0;
  if (!sameRecords(sides[0], sides[1], COLLECTION)) throw new Error(`reconciliation of N=${n} d=${d} did not converge`);
  return { n, d, roundTrips: Math.ceil(messages / 2), bytesPerSide: Math.max(...sent), shipAllBytesPerSide: shipAll, recordsShipped: shipped, ms };
}
