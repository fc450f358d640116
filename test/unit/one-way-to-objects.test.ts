// "Reaching objects in one module": only server/objects.ts names a Durable Object (idFromName) or
// makes its stub from a namespace (`.get(` on a binding), so every call to an object follows its
// one retry rule.
import { readFileSync } from "node:fs";
import { relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { sourceFiles } from "../helpers/source-files";

const root = resolve(import.meta.dirname, "../..");
const files = ["workers", "durable-objects", "server", "shared", "clients"]
  .flatMap((f) => sourceFiles(resolve(root, f), /\.ts$/))
  .map((path) => ({ path: relative(root, path).split("\\").join("/"), text: readFileSync(path, "utf8") }));

/** The source without its comments (a comment may name idFromName). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1");

describe("reaching objects in one module", () => {
  it("nothing but server/objects.ts calls idFromName", () => {
    const naming = files.filter((f) => /\bidFromName\s*\(/.test(code(f.text))).map((f) => f.path);
    expect(naming).toEqual(["server/objects.ts"]);
  });

  it("nothing but server/objects.ts makes a stub from a binding (env.X.get(…))", () => {
    const making = files.filter((f) => /\benv\??\.[A-Z_]+\??\.get\s*\(/.test(code(f.text))).map((f) => f.path);
    expect(making).toEqual([]);
  });
});
