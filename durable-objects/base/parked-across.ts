// How many unauthenticated ("parked") sockets each client holds across the relay, for
// common.max_unauthenticated_sockets_per_client (docs/hostile.md, "Parked sockets").
//
// Kept in this module's memory, which every object of the isolate shares: under `workerd serve`
// (`npm start`) the Worker and every Durable Object run in one isolate, so this is the whole
// relay; on Cloudflare it is the objects one isolate happens to hold (a weaker bound there, where
// the platform's edge throttles floods of its own). The objects count, not the Worker: only an
// object knows when a socket authenticates or closes, and it reports each change at once.
//
// Each object reports its whole count per client (not a difference), so a report repeated or
// lost to an evicted instance mends itself with the object's next one (a woken object reports
// from its sockets' attachments). A report whose sockets' deadlines have all passed by more than
// the runtime's linger is ignored and dropped: its object was evicted and never woke, and those
// sockets are closed or about to be.

interface Report {
  counts: ReadonlyMap<string, number>;
  /** After this (ms since the epoch) the report no longer counts. */
  until: number;
}

const reports = new Map<string, Report>();
const totals = new Map<string, number>();
/** Every client's parked sockets together. */
let all = 0;
let nextSweep = 0;

function add(counts: ReadonlyMap<string, number>, sign: 1 | -1): void {
  for (const [client, n] of counts) {
    all += sign * n;
    const t = (totals.get(client) ?? 0) + sign * n;
    if (t > 0) totals.set(client, t);
    else totals.delete(client);
  }
}

/** Object `objectId` now holds `counts` parked sockets per client, the last of them until `until`. */
export function reportParked(objectId: string, counts: ReadonlyMap<string, number>, until: number): void {
  const before = reports.get(objectId);
  if (before) add(before.counts, -1);
  if (counts.size === 0) {
    reports.delete(objectId);
    return;
  }
  reports.set(objectId, { counts, until });
  add(counts, 1);
}

/** Parked sockets `client` holds across the objects of this isolate. */
export function parkedAcross(client: string, now: number = Date.now()): number {
  sweep(now);
  return totals.get(client) ?? 0;
}

/** Parked sockets every client together holds across the objects of this isolate (common.max_unauthenticated_sockets). */
export function parkedAll(now: number = Date.now()): number {
  sweep(now);
  return Math.max(0, all);
}

function sweep(now: number): void {
  if (now >= nextSweep) {
    nextSweep = now + 1_000;
    for (const [id, r] of reports) {
      if (r.until > now) continue;
      add(r.counts, -1);
      reports.delete(id);
    }
  }
}
