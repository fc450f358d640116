// The structure drawn from the imports (the relay, the SDK, scripts, bench and tests) has no
// circle: no module reaches itself through relative imports (type-only ones included: a circle of
// types still ties the modules together).
// It also keeps the layers apart: shared/ (what the relay and the SDK both run) imports nothing
// above it, the SDK (clients/) nothing of the relay, and the relay nothing of the SDK; none of them
// imports the scripts, the bench or the tests.
// And shared/ holds only what both sides run: every module of it is reached from the relay
// (workers/, durable-objects/, server/, migrations/) and from the SDK (clients/); a module only
// one side reaches lives beside that side (server/..., clients/<protocol>/protocol/...).
// The graph is read with a regex over `import ... from "./..."`, `export ... from "./..."` and
// `import("./...")`, so it needs no bundler.
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { sourceFiles } from "../helpers/source-files";

const root = resolve(import.meta.dirname, "../..");
const FOLDERS = ["workers", "durable-objects", "shared", "server", "clients", "scripts", "bench", "migrations", "web", "test"];

/** The files `from` imports by a relative path that exist in the tree. */
function relativeImports(from: string, text: string): string[] {
  const out: string[] = [];
  const spec = /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+["'](\.{1,2}\/[^"']+)["']/g;
  const bare = /(?:^|\n)\s*import\s+["'](\.{1,2}\/[^"']+)["']/g;
  const dynamic = /\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;
  for (const re of [spec, bare, dynamic]) {
    for (const m of text.matchAll(re)) {
      const target = resolveModule(resolve(dirname(from), m[1]!));
      if (target) out.push(target);
    }
  }
  return out;
}

function resolveModule(base: string): string | null {
  const candidates = [base, base.replace(/\.js$/, ".ts"), `${base}.ts`, `${base}.mts`, `${base}.js`, join(base, "index.ts")];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile()) ?? null;
}

/** The folders each layer may not import from: a module's layer is its top folder. */
const LAYERS: Record<string, readonly string[]> = {
  shared: ["clients", "durable-objects", "workers", "server", "migrations", "scripts", "bench", "web", "test"],
  clients: ["durable-objects", "workers", "server", "migrations", "scripts", "bench", "web", "test"],
  workers: ["clients", "scripts", "bench", "web", "test"],
  "durable-objects": ["clients", "scripts", "bench", "web", "test"],
  server: ["clients", "scripts", "bench", "web", "test"],
};

/** Every import in `graph` (paths relative to the root) that crosses a layer rule, as "from -> to". */
function layerBreaks(graph: Map<string, string[]>, rules: Record<string, readonly string[]> = LAYERS): string[] {
  const top = (path: string) => path.split("/")[0]!;
  return [...graph].flatMap(([from, targets]) =>
    targets.filter((to) => rules[top(from)]?.includes(top(to))).map((to) => `${from} -> ${to}`),
  );
}

/** The sides that run a module: the relay's top folders and the SDK's. Tests, the bench, the scripts and web/ are neither. */
const SIDES = { relay: ["workers", "durable-objects", "server", "migrations"], sdk: ["clients"] } as const;

/** The modules of shared/ that not both sides reach (transitively, from every file of a side's folders), by who reaches them. */
function oneSided(graph: Map<string, string[]>): { relayOnly: string[]; sdkOnly: string[]; neither: string[] } {
  const reach = (tops: readonly string[]): Set<string> => {
    const seen = new Set<string>();
    const todo = [...graph.keys()].filter((f) => tops.includes(f.split("/")[0]!));
    for (let f = todo.pop(); f !== undefined; f = todo.pop()) {
      if (seen.has(f)) continue;
      seen.add(f);
      todo.push(...(graph.get(f) ?? []));
    }
    return seen;
  };
  const relay = reach(SIDES.relay);
  const sdk = reach(SIDES.sdk);
  const shared = [...graph.keys()].filter((f) => f.startsWith("shared/")).sort();
  return {
    relayOnly: shared.filter((f) => relay.has(f) && !sdk.has(f)),
    sdkOnly: shared.filter((f) => sdk.has(f) && !relay.has(f)),
    neither: shared.filter((f) => !relay.has(f) && !sdk.has(f)),
  };
}

/** Every circle in a graph, each once, as the path of files from its first member back to it. */
function cycles(graph: Map<string, string[]>): string[][] {
  const found = new Map<string, string[]>();
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, "open");
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === "open") {
        const circle = stack.slice(stack.indexOf(next));
        const key = [...circle].sort().join(" ");
        if (!found.has(key)) found.set(key, [...circle, next]);
      } else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, "done");
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return [...found.values()];
}

describe("the import graph", () => {
  it("the cycle finder finds a circle, and none in a tree", () => {
    const circle = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a"]],
      ["d", ["a"]],
    ]);
    expect(cycles(circle)).toEqual([["a", "b", "c", "a"]]);
    expect(
      cycles(
        new Map([
          ["a", ["b", "c"]],
          ["b", ["c"]],
          ["c", []],
        ]),
      ),
    ).toEqual([]);
    expect(cycles(new Map([["a", ["a"]]]))).toEqual([["a", "a"]]);
  });

  it("the import reader sees import, import type, export from and a side-effect import", () => {
    const from = join(root, "workers", "app.ts");
    const text = [
      'import { a } from "./http";',
      'import type { B } from "../shared/errors";',
      'export { c } from "./http";',
      "import {\n  d,\n  e,\n} from '../shared/encoding';",
      'import "./http";',
      'import { z } from "zod";',
    ].join("\n");
    const found = relativeImports(from, text).map((f) => relative(root, f));
    expect(found).toEqual(["workers/http.ts", "shared/errors.ts", "workers/http.ts", "shared/encoding.ts", "workers/http.ts"]);
  });

  it("layer rules: the rule reader finds an import across a layer and passes one within it", () => {
    const graph = new Map([
      ["shared/a.ts", ["shared/b.ts", "clients/c.ts"]],
      ["clients/c.ts", ["shared/a.ts", "durable-objects/d.ts"]],
      ["workers/w.ts", ["durable-objects/d.ts", "server/s.ts", "shared/a.ts"]],
      ["test/t.ts", ["workers/w.ts", "clients/c.ts"]],
    ]);
    expect(layerBreaks(graph)).toEqual(["shared/a.ts -> clients/c.ts", "clients/c.ts -> durable-objects/d.ts"]);
  });

  it("layer rules: shared/ imports nothing above it, the SDK nothing of the relay, the relay nothing of the SDK", () => {
    const files = FOLDERS.flatMap((f) => sourceFiles(join(root, f)));
    const rel = (f: string) => relative(root, f).split("\\").join("/");
    const graph = new Map(files.map((f) => [rel(f), relativeImports(f, readFileSync(f, "utf8")).map(rel)]));
    expect(graph.size).toBeGreaterThan(100);
    expect(layerBreaks(graph)).toEqual([]);
  });

  it("shared/ holds only what both sides run: the reader sorts modules by the sides that reach them", () => {
    const graph = new Map([
      ["workers/w.ts", ["server/s.ts"]],
      ["server/s.ts", ["shared/relay.ts", "shared/both.ts"]],
      ["clients/c.ts", ["shared/sdk.ts"]],
      ["shared/sdk.ts", ["shared/both.ts", "shared/deep.ts"]],
      ["shared/relay.ts", []],
      ["shared/both.ts", []],
      ["shared/deep.ts", []],
      ["shared/tested.ts", []],
      ["test/t.ts", ["shared/tested.ts", "shared/relay.ts", "shared/sdk.ts"]],
      ["web/page.ts", ["shared/relay.ts"]],
    ]);
    expect(oneSided(graph)).toEqual({
      relayOnly: ["shared/relay.ts"],
      sdkOnly: ["shared/deep.ts", "shared/sdk.ts"],
      neither: ["shared/tested.ts"],
    });
  });

  it("shared/ holds only what both the relay and the SDK run", () => {
    const files = FOLDERS.flatMap((f) => sourceFiles(join(root, f)));
    const rel = (f: string) => relative(root, f).split("\\").join("/");
    const graph = new Map(files.map((f) => [rel(f), relativeImports(f, readFileSync(f, "utf8")).map(rel)]));
    expect([...graph.keys()].filter((f) => f.startsWith("shared/")).length).toBeGreaterThan(20);
    expect(oneSided(graph)).toEqual({ relayOnly: [], sdkOnly: [], neither: [] });
  });

  it("no module of the relay, the SDK, the scripts, the bench or the tests reaches itself through its imports", () => {
    const files = FOLDERS.flatMap((f) => sourceFiles(join(root, f)));
    expect(files.length).toBeGreaterThan(100);
    const graph = new Map(files.map((f) => [f, relativeImports(f, readFileSync(f, "utf8"))]));
    const circles = cycles(graph).map((c) => c.map((f) => relative(root, f)).join(" -> "));
    expect(circles).toEqual([]);
  });
});
