// The bounds of one recipient's queue (the Tally protocol §6.4 lets a relay evict or refuse when a
// queue is full, so long as it documents which; docs/tally.md, "Queue bounds"). Pure: the
// recipient's object (durable-objects/tally/tally-queue.ts) reads the rows, asks, and applies the
// answer in one transaction.
//
// The policy:
// - One sender's share (by count and bytes): a new envelope over it evicts that sender's own
//   oldest envelopes, never another sender's.
// - The whole queue (by count and bytes), when the new envelope (after its sender's own trim) does
//   not fit:
//   - from a contact (a user the recipient has sent an envelope to: the recipient's own doing,
//     which no stranger can bring about): strangers' envelopes are evicted, oldest first, as many as
//     it takes; if all of theirs would not make room, the envelope is refused and nothing is evicted;
//   - from a stranger: strangers' oldest envelopes (any stranger's) are evicted as it takes; if
//     theirs would not make room (the queue is full of contacts' envelopes), it is refused.
//   A contact's envelope is never evicted to make room for another's.
// - Strangers together (senders the recipient never wrote to) hold at most a share of the queue
//   (queue_strangers_share of its count and bytes): a stranger's envelope past it evicts strangers'
//   oldest first. Fresh keys by the thousand cannot push out a contact's envelope, and cannot keep
//   a new correspondent out for good either: the newest strangers' envelopes are the ones kept.
import { TALLY_LIMITS } from "../../shared/limits";

/** One stored envelope, as the bounds see it. */
export interface QueuedRow {
  seq: number;
  from: string;
  bytes: number;
}

export interface QueueBounds {
  maxEnvelopes: number;
  maxBytes: number;
  maxPerSender: number;
  maxBytesPerSender: number;
  /** Envelopes and bytes strangers' envelopes may hold together. */
  maxStrangerEnvelopes: number;
  maxStrangerBytes: number;
}

export const QUEUE_BOUNDS: QueueBounds = {
  maxEnvelopes: TALLY_LIMITS.queue_max_envelopes,
  maxBytes: TALLY_LIMITS.queue_max_bytes,
  maxPerSender: TALLY_LIMITS.queue_max_per_sender,
  maxBytesPerSender: TALLY_LIMITS.queue_max_bytes_per_sender,
  maxStrangerEnvelopes: Math.floor(TALLY_LIMITS.queue_max_envelopes * TALLY_LIMITS.queue_strangers_share),
  maxStrangerBytes: Math.floor(TALLY_LIMITS.queue_max_bytes * TALLY_LIMITS.queue_strangers_share),
};

/** Kept: store it and delete `evict` (by seq) in the same transaction. Refused: nothing changes. */
type QueuePlan = { keep: true; evict: number[] } | { keep: false; why: "too_large" | "full" };

/**
 * Where a new envelope of `bytes` from `from` goes in a queue holding `rows` (any order):
 * `isContact(sender)` tells contacts (never evicted for others) from strangers.
 */
export function planStore(
  rows: readonly QueuedRow[],
  incoming: { from: string; bytes: number },
  isContact: (from: string) => boolean,
  bounds: QueueBounds = QUEUE_BOUNDS,
): QueuePlan {
  if (incoming.bytes > bounds.maxBytes || incoming.bytes > bounds.maxBytesPerSender) return { keep: false, why: "too_large" };
  const oldestFirst = [...rows].sort((a, b) => a.seq - b.seq);
  // The sender's own share: its newest kept, with the new one, within both per-sender bounds.
  const own = oldestFirst.filter((r) => r.from === incoming.from);
  const evict: number[] = [];
  let ownCount = 1;
  let ownBytes = incoming.bytes;
  for (let i = own.length - 1; i >= 0; i--) {
    const r = own[i];
    if (ownCount + 1 <= bounds.maxPerSender && ownBytes + r.bytes <= bounds.maxBytesPerSender) {
      ownCount++;
      ownBytes += r.bytes;
    } else {
      // this one and every older one of the sender's go
      for (let j = i; j >= 0; j--) evict.push(own[j].seq);
      break;
    }
  }
  const gone = new Set(evict);
  let count = 1;
  let bytes = incoming.bytes;
  for (const r of oldestFirst) {
    if (gone.has(r.seq)) continue;
    count++;
    bytes += r.bytes;
  }
  const known = new Map<string, boolean>();
  const stranger = (from: string) => {
    let k = known.get(from);
    if (k === undefined) {
      k = isContact(from);
      known.set(from, k);
    }
    return !k;
  };
  const fromStranger = stranger(incoming.from);
  // Strangers' envelopes together, the new one's included when it is a stranger's.
  let strangerCount = fromStranger ? 1 : 0;
  let strangerBytes = fromStranger ? incoming.bytes : 0;
  if (fromStranger)
    for (const r of oldestFirst) {
      if (gone.has(r.seq) || !stranger(r.from)) continue;
      strangerCount++;
      strangerBytes += r.bytes;
    }
  const fits = () =>
    count <= bounds.maxEnvelopes &&
    bytes <= bounds.maxBytes &&
    (!fromStranger || (strangerCount <= bounds.maxStrangerEnvelopes && strangerBytes <= bounds.maxStrangerBytes));
  if (fits()) return { keep: true, evict };
  // Room is made of strangers' envelopes only, oldest first (a contact's own are not the others').
  for (const r of oldestFirst) {
    if (gone.has(r.seq) || !stranger(r.from) || (!fromStranger && r.from === incoming.from)) continue;
    evict.push(r.seq);
    count--;
    bytes -= r.bytes;
    if (fromStranger) {
      strangerCount--;
      strangerBytes -= r.bytes;
    }
    if (fits()) return { keep: true, evict };
  }
  return { keep: false, why: "full" };
}
