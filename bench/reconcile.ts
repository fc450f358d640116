// Range reconciliation, recon1 (clients/passnote/protocol/reconcile.ts) and recon2 (reconcile2.ts) side by
// side, pure, in this process: two stores of N records that differ in d, one side opening with its
// probe, each side answering the other's reconcile message (and shipping records as deltas, which
// the other side merges before it answers) until a side has nothing left to send. Counted per
// side: the reconcile and delta messages it sends and their bytes on the wire (encoded frame +
// XChaCha20-Poly1305 seal), against shipping everything (every record of a side as deltas).
// A flight is one side's turn (its deltas and its reply, sent together); a round trip is two
// flights; the opening probe is the first. The last flight may carry deltas only (records the
// other side asked for): it counts, since the exchange is over only when they arrive.
import { PASSNOTE_LIMITS as L } from "../shared/limits";
import { MemoryStore } from "../clients/passnote/protocol/records";
import { openingProbe, respondToReconcile, type Reconcile } from "../clients/passnote/protocol/reconcile";
import { openingProbe2, respondToReconcile2, type Reconcile2 } from "../clients/passnote/protocol/reconcile2";
import { NONCE_BYTES, TAG_BYTES } from "../clients/passnote/protocol/seal";
import { encodeMessage, type WireRecord } from "../clients/passnote/protocol/wire";
import { fillDifferent, sameRecords } from "../test/helpers/passnote-data";

const COLLECTION = "notes";
const SEAL = NONCE_BYTES + TAG_BYTES;

export type Capability = "recon1" | "recon2";

export interface ReconcileResult {
  capability: Capability;
  n: number;
  d: number;
  /** Turns with something to send, both sides together (the opening probe is the first). */
  flights: number;
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

type Message = Reconcile | Reconcile2;

function respond(store: MemoryStore, msg: Message) {
  return msg.type === "reconcile" ? respondToReconcile(store, msg) : respondToReconcile2(store, msg);
}

export function reconcileRun(n: number, d: number, capability: Capability = "recon1"): ReconcileResult {
  const sides = [new MemoryStore(), new MemoryStore()];
  fillDifferent(sides[0], sides[1], { common: n, differences: d }, COLLECTION);
  const shipAll = Math.max(deltaBytes(sides[0].all(COLLECTION)), deltaBytes(sides[1].all(COLLECTION)));
  const sent = [0, 0];
  let shipped = 0;
  let flights = 0;
  const t0 = performance.now();
  let msg: Message | null = capability === "recon2" ? openingProbe2(sides[0], COLLECTION) : openingProbe(sides[0], COLLECTION);
  sent[0] += encodeMessage(msg).length + SEAL;
  flights++;
  let turn = 1; // the side that answers next
  while (msg) {
    const out = respond(sides[turn], msg);
    const reply = out.reply;
    const ship = out.ship.map((k) => sides[turn].get(COLLECTION, k)!); // the engine reads them by key
    if (ship.length || reply) flights++;
    if (ship.length) {
      sent[turn] += deltaBytes(ship);
      shipped += ship.length;
      for (const r of ship) sides[1 - turn].merge(COLLECTION, r);
    }
    if (reply) sent[turn] += encodeMessage(reply).length + SEAL;
    msg = reply;
    turn = 1 - turn;
  }
  const ms = performance.now() - t0;
  if (!sameRecords(sides[0], sides[1], COLLECTION)) throw new Error(`reconciliation of N=${n} d=${d} did not converge`);
  return {
    capability,
    n,
    d,
    flights,
    roundTrips: Math.ceil(flights / 2),
    bytesPerSide: Math.max(...sent),
    shipAllBytesPerSide: shipAll,
    recordsShipped: shipped,
    ms,
  };
}
