// "One formatIssue": a failed zod parse becomes a message for people in one place
// (shared/errors.ts formatIssue), so that every answer words it the same way. No other module of
// the relay or the SDK reads a parse error's issues itself.
import { readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { sourceFiles } from "../helpers/source-files";
import * as z from "zod";
import { formatIssue } from "../../shared/errors";

const root = resolve(import.meta.dirname, "../..");
const FOLDERS = ["workers", "durable-objects", "shared", "server", "clients", "scripts", "web"];

describe("one formatIssue", () => {
  it("no module but shared/errors.ts reads a parse error's issues", () => {
    const readers = FOLDERS.flatMap((f) => sourceFiles(join(root, f), /\.(ts|mjs)$/))
      .map((path) => relative(root, path).split("\\").join("/"))
      .filter((path) => path !== "shared/errors.ts" && /\.issues\s*\[/.test(readFileSync(join(root, path), "utf8")));
    expect(readers).toEqual([]);
  });

  it("words the first issue with where it is, inside a named object when given", () => {
    const r = z.object({ a: z.object({ b: z.string() }) }).safeParse({ a: { b: 1 } });
    expect(r.success).toBe(false);
    if (r.success) return;
    expect(formatIssue(r.error)).toMatch(/ at a\.b$/);
    expect(formatIssue(r.error, "envelope")).toMatch(/ at envelope\.a\.b$/);
    expect(formatIssue({ issues: [] })).toBe("invalid");
  });
});
