import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { sha256 } from "@noble/hashes/sha2.js";
import { buildPage, pageQuerySchema, postQuerySchema, resolveUntil, wakeBody, wakeSchema } from "../../../../shared/mailbox/messages";
import { isTopic, wakePushTopic } from "../../../../shared/mailbox/topic";
import { pushTopicSchema } from "../../../../server/webpush/send";
import { MAILBOX_LIMITS } from "../../../../shared/limits";
import { base64urlDecode, base64urlEncode, utf8Encode } from "../../../../shared/encoding";

const NOW = 1_800_000_000;
const item = (seq: number, bytes = 4) => ({ seq, at: NOW, until: NOW + 60, blob: new Uint8Array(bytes).fill(seq) });

describe("docs/mailbox.md: mailbox topics", () => {
  it("16-128 characters of [A-Za-z0-9_-]; anything else is not a topic", () => {
    expect(isTopic("a".repeat(16))).toBe(true);
    expect(isTopic("Az09_-".repeat(21) + "xx")).toBe(true); // 128
    expect(isTopic("a".repeat(15))).toBe(false);
    expect(isTopic("a".repeat(129))).toBe(false);
    expect(isTopic("a".repeat(15) + "=")).toBe(false);
    expect(isTopic("a".repeat(15) + "é")).toBe(false);
  });

  it("a wake's Topic header is base64url of the first 24 bytes of SHA-256(topic): 32 characters a push service accepts", () => {
    const topic = "inbox_0123456789abcdef";
    const t = wakePushTopic(topic);
    expect(t).toHaveLength(32);
    expect(base64urlDecode(t)).toEqual(sha256(utf8Encode(topic)).subarray(0, 24));
    expect(pushTopicSchema.safeParse(t).success).toBe(true);
  });
});

describe("docs/mailbox.md: until", () => {
  it("defaults to 30 days ahead", () => {
    expect(resolveUntil(undefined, NOW)).toEqual({ until: NOW + 30 * 86_400 });
  });
  it("in the past (or now) is refused", () => {
    expect(resolveUntil(NOW, NOW)).toHaveProperty("error");
    expect(resolveUntil(NOW - 1, NOW)).toHaveProperty("error");
    expect(resolveUntil(NOW + 1, NOW)).toEqual({ until: NOW + 1 });
  });
  it("more than 30 days ahead is refused, beyond a few minutes' clock skew that is capped", () => {
    const max = NOW + 30 * 86_400;
    expect(resolveUntil(max + 100, NOW)).toEqual({ until: max });
    expect(resolveUntil(max + MAILBOX_LIMITS.until_skew_seconds + 1, NOW)).toHaveProperty("error");
  });
});

describe("docs/mailbox.md: query parameters", () => {
  it("after, limit and wait default and bound", () => {
    expect(pageQuerySchema.parse({})).toEqual({ after: 0, limit: MAILBOX_LIMITS.page_max_items, wait: 0 });
    expect(pageQuerySchema.parse({ after: "7", limit: "3", wait: "25" })).toEqual({ after: 7, limit: 3, wait: 25 });
    for (const bad of [{ wait: "26" }, { limit: "0" }, { limit: "101" }, { after: "-1" }, { after: "1.5" }, { wait: "x" }]) {
      expect(pageQuerySchema.safeParse(bad).success).toBe(false);
    }
    expect(postQuerySchema.safeParse({ until: "soon" }).success).toBe(false);
  });

  it("fuzz: any query strings parse to bounded integers or are refused", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom("after", "limit", "wait", "x"), fc.string({ maxLength: 20 })), (q) => {
        const r = pageQuerySchema.safeParse(q);
        if (r.success) {
          expect(Number.isSafeInteger(r.data.after) && r.data.after >= 0).toBe(true);
          expect(r.data.limit >= 1 && r.data.limit <= MAILBOX_LIMITS.page_max_items).toBe(true);
          expect(r.data.wait >= 0 && r.data.wait <= MAILBOX_LIMITS.max_wait_seconds).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("docs/mailbox.md: pages", () => {
  it("oldest first, next is the last seq served, more says there is another page", () => {
    const p = buildPage([item(3), item(4), item(5)], 2, 2, 3);
    expect(p.items.map((i) => i.seq)).toEqual([3, 4]);
    expect(p.items[0].blob).toBe(base64urlEncode(new Uint8Array(4).fill(3)));
    expect(p).toMatchObject({ next: 4, more: true, oldest_seq: 3 });
  });

  it("the Minca protocol §4.2: a host's links come first, each distinct blob once, outside the page's byte budget: the topic's own items never push a link off the page", () => {
    const big = (seq: number, n: number, fill = 0) => ({ seq, at: 1, until: 2, blob: new Uint8Array(n).fill(fill) });
    const max = MAILBOX_LIMITS.page_max_bytes;
    const items = Array.from({ length: 16 }, (_x, i) => big(i + 1, 65_536));
    const links = [big(0, 100, 1), big(0, 100, 2), big(0, 100, 1)];
    const p = buildPage(items, 0, 100, 1, links);
    expect(p.items.slice(0, 2).map((i) => i.seq)).toEqual([0, 0]);
    expect(p.items.filter((i) => i.seq === 0)).toHaveLength(2); // the repeated blob is served once
    // the items alone fill the budget, as they would with no links
    expect(p.items.filter((i) => i.seq > 0).reduce((n, i) => n + Math.floor((i.blob.length * 3) / 4), 0)).toBeLessThanOrEqual(max);
    expect(p.items.filter((i) => i.seq > 0)).toHaveLength(buildPage(items, 0, 100, 1).items.length);
  });

  it("an empty page keeps `after` as next, and oldest_seq shows a retention gap", () => {
    expect(buildPage([], 9, 10, null)).toEqual({ items: [], next: 9, more: false, oldest_seq: null });
    expect(buildPage([item(40)], 0, 10, 40).oldest_seq).toBe(40);
  });

  it("a page stops before the item that passes page_max_bytes, but always holds one", () => {
    const big = MAILBOX_LIMITS.page_max_bytes / 2 + 1;
    const p = buildPage([item(1, big), item(2, big)], 0, 10, 1);
    expect(p.items.map((i) => i.seq)).toEqual([1]);
    expect(p.more).toBe(true);
    expect(buildPage([item(1, MAILBOX_LIMITS.page_max_bytes + 5)], 0, 10, 1).items).toHaveLength(1);
  });
});

describe("docs/mailbox.md: the wake", () => {
  it("is { topic, seq, blob } while the whole body stays under 2 KB, else { topic, seq }", () => {
    const topic = "t".repeat(16);
    const small = JSON.parse(new TextDecoder().decode(wakeBody(topic, 5, new Uint8Array([1, 2, 3]))));
    expect(wakeSchema.parse(small)).toEqual({ topic, seq: 5, blob: "AQID" });
    const big = wakeBody(topic, 6, new Uint8Array(1600));
    expect(JSON.parse(new TextDecoder().decode(big))).toEqual({ topic, seq: 6 });
    // right at the edge: the largest blob whose body is < 2048 bytes is carried
    let n = 0;
    while (
      wakeBody(topic, 7, new Uint8Array(n + 1)).length < MAILBOX_LIMITS.wake_max_bytes &&
      JSON.parse(new TextDecoder().decode(wakeBody(topic, 7, new Uint8Array(n + 1)))).blob
    )
      n++;
    expect(wakeBody(topic, 7, new Uint8Array(n)).length).toBeLessThan(2048);
    expect(JSON.parse(new TextDecoder().decode(wakeBody(topic, 7, new Uint8Array(n + 1)))).blob).toBeUndefined();
  });
});
