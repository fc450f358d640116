// "One result type and one rate answer": what an object's RPC method answers the Worker (a value,
// or the HTTP error with its wait) is declared once, in durable-objects/base/result.ts, which the
// objects and the Worker import; the 429 an object's per-client rate answers is built once, by
// the base's `limit()` (durable-objects/base/stored-object.ts).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith(".ts") && !name.endsWith(".d.ts") ? [path] : [];
  });
}

const files = ["workers", "durable-objects", "server"]
  .flatMap((f) => sourceFiles(join(root, f)))
  .map((path) => ({ path: relative(root, path).split("\\").join("/"), text: readFileSync(path, "utf8") }));

describe("one result type and one rate answer", () => {
  it("the failed result ({ ok: false; status; code; message }) is declared only in durable-objects/base/result.ts", () => {
    const declaring = files.filter((f) => /ok:\s*false;\s*status:\s*number;\s*code:/.test(f.text)).map((f) => f.path);
    expect(declaring).toEqual(["durable-objects/base/result.ts"]);
  });

  it("an object's 429 rate_limited is built only by the base's limit()", () => {
    const building = files
      .filter((f) => /fail\(\s*429|ok:\s*false,\s*status:\s*429/.test(f.text))
      .map((f) => f.path)
      .filter((p) => p.startsWith("durable-objects/"));
    expect(building).toEqual(["durable-objects/base/stored-object.ts"]);
  });
});
