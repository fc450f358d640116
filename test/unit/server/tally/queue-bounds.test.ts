// A recipient's queue bounds (server/tally/queue-bounds.ts): a sender's own oldest make room for
// its new envelope; a full queue makes room for a contact by evicting strangers' oldest; strangers
// together hold at most their share of the queue, a stranger's envelope past it evicting
// strangers' oldest; a contact's envelope is never evicted for another's.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import "../../../helpers/fast-check-seed";
import { planStore, type QueueBounds, type QueuedRow } from "../../../../server/tally/queue-bounds";

const small: QueueBounds = {
  maxEnvelopes: 10,
  maxBytes: 1_000,
  maxPerSender: 4,
  maxBytesPerSender: 400,
  maxStrangerEnvelopes: 5,
  maxStrangerBytes: 500,
};
const rowsOf = (...senders: string[]): QueuedRow[] => senders.map((from, i) => ({ seq: i + 1, from, bytes: 10 }));
const contacts =
  (...c: string[]) =>
  (from: string) =>
    c.includes(from);

describe("a recipient's queue bounds", () => {
  it("within every bound: kept, nothing evicted", () => {
    expect(planStore(rowsOf("a", "b"), { from: "c", bytes: 10 }, contacts(), small)).toEqual({ keep: true, evict: [] });
  });

  it("over its own share a sender evicts its own oldest (by count and by bytes), whoever it is", () => {
    const rows = rowsOf("a", "s", "a", "a", "a");
    expect(planStore(rows, { from: "a", bytes: 10 }, contacts(), small)).toEqual({ keep: true, evict: [1] });
    const heavy: QueuedRow[] = [
      { seq: 1, from: "a", bytes: 150 },
      { seq: 2, from: "a", bytes: 150 },
      { seq: 3, from: "b", bytes: 10 },
    ];
    expect(planStore(heavy, { from: "a", bytes: 150 }, contacts(), small)).toEqual({ keep: true, evict: [1] });
  });

  it("tally.queue_strangers_share: strangers at their share of the queue: a new stranger's envelope evicts strangers' oldest, never a contact's", () => {
    const rows = rowsOf("c", "s1", "c", "s2", "s3", "s4", "s5");
    expect(planStore(rows, { from: "s9", bytes: 10 }, contacts("c"), small)).toEqual({ keep: true, evict: [2] });
    // by bytes too
    const heavy: QueuedRow[] = [
      { seq: 1, from: "s1", bytes: 300 },
      { seq: 2, from: "c", bytes: 300 },
      { seq: 3, from: "s2", bytes: 150 },
    ];
    expect(planStore(heavy, { from: "s3", bytes: 100 }, contacts("c"), small)).toEqual({ keep: true, evict: [1] });
  });

  it("a queue full of contacts' envelopes refuses a stranger's and evicts nothing", () => {
    const rows = rowsOf("c", "c", "c", "c", "d", "d", "d", "d", "e", "e");
    expect(planStore(rows, { from: "s9", bytes: 10 }, contacts("c", "d", "e"), small)).toEqual({ keep: false, why: "full" });
  });

  it("a full queue makes room for a contact by evicting strangers' oldest, never another contact's", () => {
    const rows = rowsOf("c", "d", "s1", "s2", "d", "s3", "c", "s4", "s5", "s6");
    expect(planStore(rows, { from: "c", bytes: 10 }, contacts("c", "d"), small)).toEqual({ keep: true, evict: [3] });
    const big = { from: "c", bytes: 150 }; // over the bytes bound: by bytes, the oldest stranger's goes
    const full: QueuedRow[] = rows.map((r) => ({ ...r, bytes: 99 }));
    expect(planStore(full.slice(0, 9), big, contacts("c", "d"), small)).toEqual({ keep: true, evict: [3] });
  });

  it("a contact whose envelope strangers' cannot make room for is refused, and nothing is evicted", () => {
    const rows = rowsOf("c", "c", "c", "d", "d", "d", "d", "e", "e", "s1").map((r) => ({ ...r, bytes: 99 }));
    expect(planStore(rows, { from: "e", bytes: 200 }, contacts("c", "d", "e"), small)).toEqual({ keep: false, why: "full" });
  });

  it("larger than a sender's share or the whole queue: refused", () => {
    expect(planStore([], { from: "a", bytes: 401 }, contacts("a"), small)).toEqual({ keep: false, why: "too_large" });
  });

  it("property: a kept plan fits every bound, strangers within their share; it evicts only the sender's own or strangers' rows, never a contact's for another", () => {
    const sender = fc.constantFrom("c1", "c2", "s1", "s2", "s3");
    const isContact = (f: string) => f.startsWith("c");
    fc.assert(
      fc.property(
        fc.array(fc.record({ from: sender, bytes: fc.integer({ min: 1, max: 150 }) }), { maxLength: 30 }),
        fc.record({ from: sender, bytes: fc.integer({ min: 1, max: 150 }) }),
        (raw, incoming) => {
          // a queue that is within its bounds, as the relay keeps it
          const rows: QueuedRow[] = [];
          for (const r of raw) {
            const plan = planStore(rows, r, isContact, small);
            if (!plan.keep) continue;
            for (const seq of plan.evict)
              rows.splice(
                rows.findIndex((x) => x.seq === seq),
                1,
              );
            rows.push({ seq: raw.indexOf(r) + 1, ...r });
          }
          const plan = planStore(rows, incoming, isContact, small);
          if (!plan.keep) return;
          const after = rows.filter((r) => !plan.evict.includes(r.seq));
          expect(after.length + 1).toBeLessThanOrEqual(small.maxEnvelopes);
          expect(after.reduce((n, r) => n + r.bytes, incoming.bytes)).toBeLessThanOrEqual(small.maxBytes);
          const mine = after.filter((r) => r.from === incoming.from);
          expect(mine.length + 1).toBeLessThanOrEqual(small.maxPerSender);
          if (!isContact(incoming.from)) {
            const strangers = after.filter((r) => !isContact(r.from));
            expect(strangers.length + 1).toBeLessThanOrEqual(small.maxStrangerEnvelopes);
            expect(strangers.reduce((n, r) => n + r.bytes, incoming.bytes)).toBeLessThanOrEqual(small.maxStrangerBytes);
          }
          for (const seq of plan.evict) {
            const gone = rows.find((r) => r.seq === seq)!;
            expect(gone.from === incoming.from || !isContact(gone.from)).toBe(true);
          }
        },
      ),
    );
  });
});
