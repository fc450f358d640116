// The mailbox wire (docs/mailbox.md): query parameters, answers and the wake a receiver gets,
// with the rules that decide them (until range, page bounds, whether a wake carries the blob).
import * as z from "zod";
import { base64urlEncode, utf8Encode } from "../encoding";
import { MAILBOX_LIMITS } from "../limits";

const uint = z
  .string()
  .regex(/^\d{1,15}$/, "must be a non-negative integer")
  .transform(Number);

/**
 * GET ?after=&limit=&wait= (all optional), within a log's page bounds: the mailbox's page shape,
 * which a Minca host's space logs share (docs/hosting.md).
 */
export function pageQuerySchemaFor(bounds: { page_max_items: number; max_wait_seconds: number }) {
  return z.object({
    after: uint.optional().default(0),
    limit: uint
      .optional()
      .default(bounds.page_max_items)
      .refine((n) => n >= 1 && n <= bounds.page_max_items, `limit must be 1-${bounds.page_max_items}`),
    wait: uint
      .optional()
      .default(0)
      .refine((n) => n <= bounds.max_wait_seconds, `wait must be at most ${bounds.max_wait_seconds}`),
  });
}

/** GET ?after=&limit=&wait= on a mailbox. */
export const pageQuerySchema = pageQuerySchemaFor(MAILBOX_LIMITS);
export type PageQuery = z.infer<typeof pageQuerySchema>;

/** POST ?until= (optional). */
export const postQuerySchema = z.object({ until: uint.optional() });

/**
 * The `until` an item is stored with (unix seconds): the default is 30 days ahead; a value in
 * the past (or now) or further ahead than 30 days (plus the skew allowance) is refused; one in
 * the allowance is capped at 30 days.
 */
export function resolveUntil(requested: number | undefined, nowSeconds: number): { until: number } | { error: string } {
  const max = nowSeconds + MAILBOX_LIMITS.max_until_seconds;
  if (requested === undefined) return { until: max };
  if (requested <= nowSeconds) return { error: "until is in the past" };
  if (requested > max + MAILBOX_LIMITS.until_skew_seconds) return { error: "until is more than 30 days ahead" };
  return { until: Math.min(requested, max) };
}

export interface StoredItem {
  seq: number;
  /** Unix seconds when it was stored. */
  at: number;
  until: number;
  blob: Uint8Array;
}

const seconds = z.number().int().nonnegative().describe("unix seconds");
const seq = z.number().int().nonnegative();

/** 201 to POST: the item's seq and the `until` it is kept to. */
export const postedSchema = z.object({ seq: seq.positive(), until: seconds });
export type Posted = z.infer<typeof postedSchema>;

const pageItemSchema = z.object({
  seq: seq.describe("0 for a host's link (first page only)"),
  at: seconds.describe("when it was stored"),
  until: seconds,
  blob: z.string().describe("base64url of the item as posted"),
});
type PageItem = z.infer<typeof pageItemSchema>;

/** 200 to GET: a page, oldest first. */
export const pageSchema = z.object({
  items: z.array(pageItemSchema),
  next: seq.describe("the `after` of the next page"),
  more: z.boolean(),
  oldest_seq: seq.nullable().describe("the oldest item still held; null when none is"),
});
export type Page = z.infer<typeof pageSchema>;

/**
 * A page from the live items after `after`, oldest first (`rows` may hold one more than
 * `limit`, which is how `more` is known). Stops before the item that would pass page_max_bytes,
 * but always holds at least one. A host's links of this topic (docs/hosting.md, the Minca protocol §4.2) come
 * first, each with seq 0, on the first page only (after = 0); they change neither `next` nor
 * `more`, and do not count against `limit`.
 */
export function buildPage(rows: StoredItem[], after: number, limit: number, oldestSeq: number | null, links: StoredItem[] = []): Page {
  const items: PageItem[] = [];
  let bytes = 0;
  for (const r of rows) {
    if (items.length >= limit) break;
    if (items.length > 0 && bytes + r.blob.length > MAILBOX_LIMITS.page_max_bytes) break;
    bytes += r.blob.length;
    items.push({ seq: r.seq, at: r.at, until: r.until, blob: base64urlEncode(r.blob) });
  }
  // A Minca host's links (the Minca protocol §4.2; first page only): before the items, each
  // distinct blob once, and outside the page's byte budget, so the topic's own items can never
  // push a link off the page. What links a fetch loads is bounded where they are loaded (each
  // account serves at most link_bytes_served_per_account).
  const linkItems: PageItem[] = [];
  if (after === 0) {
    // (A topic is computed from its blob, so the links of one topic are one blob: served once,
    // until the last of them expires.)
    const seen = new Map<string, PageItem>();
    for (const l of links) {
      const blob = base64urlEncode(l.blob);
      const held = seen.get(blob);
      if (held) {
        held.until = Math.max(held.until, l.until);
        continue;
      }
      const item = { seq: 0, at: l.at, until: l.until, blob };
      seen.set(blob, item);
      linkItems.push(item);
    }
  }
  const next = items.length ? items[items.length - 1].seq : after;
  return { items: [...linkItems, ...items], next, more: rows.length > items.length, oldest_seq: oldestSeq };
}

/** The decrypted body of a wake: `{ topic, seq, blob? }`, the blob only when the whole stays under 2 KB. */
export function wakeBody(topic: string, seq: number, blob: Uint8Array | null): Uint8Array {
  if (blob !== null) {
    const full = utf8Encode(JSON.stringify({ topic, seq, blob: base64urlEncode(blob) }));
    if (full.length < MAILBOX_LIMITS.wake_max_bytes) return full;
  }
  return utf8Encode(JSON.stringify({ topic, seq }));
}

export const wakeSchema = z.object({ topic: z.string(), seq: z.number().int().positive(), blob: z.string().optional() });
export type Wake = z.infer<typeof wakeSchema>;

/** Receiver ids: 16 hex characters. */
export const receiverIdSchema = z.string().regex(/^[0-9a-f]{16}$/, "receiver id must be 16 hex characters");

/** 201 to POST .../receivers: the receiver's id (the same id again for the same subscription). */
export const receiverAddedSchema = z.object({ id: receiverIdSchema });
export type ReceiverAdded = z.infer<typeof receiverAddedSchema>;
