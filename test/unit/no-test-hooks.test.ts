// "Production classes carry no test hooks": what only a test reads or drives lives in test/ (a
// subclass bound in place of the production class, as test/worker/test-objects.ts does, or a helper
// that reaches the field it needs), or comes in as a dependency the caller injects (a clock, a
// fetch). The relay and the SDK hold no module named for tests and no member documented as being
// there for tests.
import { readFileSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { sourceFiles } from "../helpers/source-files";

const root = resolve(import.meta.dirname, "../..");
const PRODUCTION = ["workers", "durable-objects", "shared", "server", "clients"];

/** A comment that says the code next to it is there for tests. */
const HOOK_NOTE = /\b(?:tests? only|only for tests?|for tests that|tests? call it|tests? hooks?|tests reach|for testing)\b/i;

/** The places in `text` that note a test hook, as "line: text". */
function hookNotes(text: string): string[] {
  return text
    .split("\n")
    .flatMap((line, i) => (/^\s*(?:\/\/|\/?\*)/.test(line) && HOOK_NOTE.test(line) ? [`${i + 1}: ${line.trim()}`] : []));
}

describe("no test hooks in production classes", () => {
  it("the note finder sees a test hook's comment and nothing else", () => {
    expect(hookNotes("  /** The check (tests only: a person reads it). */\n  get check() {}")).toEqual([
      "1: /** The check (tests only: a person reads it). */",
    ]);
    expect(hookNotes("// Tests call it.\nconst tests = 1; // the contract tests of the store")).toEqual(["1: // Tests call it."]);
    expect(hookNotes("const forTests = 'tests only';")).toEqual([]);
  });

  it("no module of the relay or the SDK is named for tests or notes a member as being there for tests", () => {
    const files = PRODUCTION.flatMap((f) => sourceFiles(join(root, f)));
    expect(files.length).toBeGreaterThan(100);
    const found = files.flatMap((path) => {
      const rel = relative(root, path).split("\\").join("/");
      const named = /(?:^|[-_.])tests?(?:[-_.]|$)|^test/i.test(basename(rel).replace(/\.(ts|mts|mjs|js)$/, ""))
        ? [`${rel}: named for tests`]
        : [];
      return [...named, ...hookNotes(readFileSync(path, "utf8")).map((n) => `${rel}:${n}`)];
    });
    expect(found).toEqual([]);
  });
});
