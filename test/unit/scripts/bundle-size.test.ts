// The Worker's size: built as `wrangler deploy` uploads it (scripts/build.ts), gzipped, it stays
// under 195 kB. A size, not a timing: it prints the figure and fails only past the bound.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { buildWorker } from "../../../scripts/build";

const MAX_GZIP_BYTES = 195_000;
const out = mkdtempSync(join(tmpdir(), "edge-relay-bundle-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe("the Worker bundle", () => {
  it("is under 195 kB gzipped, as wrangler deploy uploads it (no Public Suffix List in it)", () => {
    buildWorker(out);
    const js = readFileSync(join(out, "index.js"));
    const gzip = gzipSync(js).length;
    console.log(`Worker bundle: ${(js.length / 1000).toFixed(1)} kB, ${(gzip / 1000).toFixed(1)} kB gzipped`);
    expect(gzip).toBeLessThan(MAX_GZIP_BYTES);
    expect(js.toString("utf8")).not.toContain("tldts");
  }, 240_000);
});
