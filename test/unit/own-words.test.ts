// The project describes each protocol rule in its own words: what a reader, an app developer or an
// operator gets (the documents, the information document, the published declarations' comments,
// the test vectors' notes) never cites a document that is not in the repository ("Minca 06 §4.2",
// a seed by its section, a protocol file by its name).
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { relayInfo } from "../../server/info";

const root = new URL("../../", import.meta.url).pathname;
/** A protocol document by its number or file name, or a seed by section. */
const OUTSIDE = [
  /\b(Minca|Tally|Passnote)\s+0\d+\b/g,
  /\bseeds?\s+(0\d\d|§|section)/gi,
  /\b00\d_[0-9a-f]{8,}\.txt\b/g,
  /\bDESIGN(\.md)?\b/g,
];

function cites(text: string): string[] {
  return OUTSIDE.flatMap((re) => [...text.matchAll(re)].map((m) => m[0]));
}

describe("in the project's own words", () => {
  it("the information document cites no outside document", () => {
    expect(cites(JSON.stringify(relayInfo({ name: "x" })))).toEqual([]);
  });

  it("the test vectors' notes cite no outside document", () => {
    const fixtures = execFileSync("git", ["ls-files", "test/fixtures"], { cwd: root, encoding: "utf8" }).split("\n").filter(Boolean);
    for (const f of fixtures) expect({ f, cites: cites(readFileSync(join(root, f), "utf8")) }).toEqual({ f, cites: [] });
  });

  it("no tracked document or source file names a protocol document by its number (Minca 06, Tally 003)", () => {
    const tracked = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" })
      .split("\0")
      .filter(
        (f) =>
          /\.(ts|md|json|html)$/.test(f) && f !== "package-lock.json" && f !== "test/unit/own-words.test.ts" && existsSync(join(root, f)),
      );
    const found = tracked.flatMap((f) => cites(readFileSync(join(root, f), "utf8")).map((c) => `${f}: ${c}`));
    expect(found).toEqual([]);
  });
});
