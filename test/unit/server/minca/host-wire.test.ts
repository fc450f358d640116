// The host's HTTP wire (docs/hosting.md): a POST body read into versions kept exactly as they arrived,
// the log's query, and links on a mailbox's first page with seq 0.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { logQuerySchema, readVersionsBody } from "../../../../server/minca/host-wire";
import { buildPage } from "../../../../shared/mailbox/messages";
import { rawElements } from "../../../../shared/json-raw";

describe("docs/hosting.md: versions are appended exactly as they arrived", () => {
  it("each element's raw text is kept: spacing, escapes and number forms untouched", () => {
    const text = ' [ {"a": 1.50, "b":"\\u00e9"} ,\n{"x":[1,2,{"y":"]"}]}, 7 ]';
    const r = readVersionsBody(text);
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.versions.map((v) => v.raw)).toEqual(['{"a": 1.50, "b":"\\u00e9"}', '{"x":[1,2,{"y":"]"}]}', "7"]);
      expect(r.versions[0].bytes).toBe(25);
    }
    expect(readVersionsBody("[]")).toMatchObject({ ok: false });
    expect(readVersionsBody("{}")).toMatchObject({ ok: false });
    expect(readVersionsBody(JSON.stringify(new Array(101).fill({})))).toMatchObject({ ok: false });
  });

  it("raw elements always re-parse to the parsed elements (fuzz)", () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue(), { maxLength: 8 }), fc.boolean(), (arr, spaced) => {
        const text = JSON.stringify(arr, null, spaced ? 2 : undefined);
        expect(rawElements(text)!.map((r) => JSON.parse(r))).toEqual(JSON.parse(text));
      }),
      { seed: 911, numRuns: 300 },
    );
    fc.assert(
      fc.property(fc.string(), (s) => {
        const r = readVersionsBody(s);
        if (r.ok) expect(r.versions.length).toBeGreaterThan(0);
      }),
      { seed: 912, numRuns: 300 },
    );
  });

  it("the log's query: limit 1-100, wait at most 25 s", () => {
    expect(logQuerySchema.parse({})).toEqual({ after: 0, limit: 100, wait: 0 });
    expect(logQuerySchema.safeParse({ limit: "101" }).success).toBe(false);
    expect(logQuerySchema.safeParse({ wait: "26" }).success).toBe(false);
    expect(logQuerySchema.safeParse({ after: "-1" }).success).toBe(false);
  });
});

describe("the Minca protocol §4.2: a host answers a mailbox fetch with its links, on the first page, with seq 0", () => {
  const item = (seq: number) => ({ seq, at: 1, until: 9, blob: new Uint8Array([seq]) });
  const link = { seq: 0, at: 2, until: 8, blob: new Uint8Array([42]) };
  it("first page: links first with seq 0, not counted in limit, next and more from the mailbox's own items", () => {
    const p = buildPage([item(1), item(2)], 0, 1, 1, [link]);
    expect(p.items.map((i) => i.seq)).toEqual([0, 1]);
    expect(p).toMatchObject({ next: 1, more: true, oldest_seq: 1 });
    expect(buildPage([], 0, 10, null, [link])).toMatchObject({ items: [{ seq: 0, blob: "Kg" }], next: 0, more: false });
  });
  it("later pages carry no links", () => {
    expect(buildPage([item(2)], 1, 10, 1, [link]).items.map((i) => i.seq)).toEqual([2]);
  });
});
