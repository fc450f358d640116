// "One way to run TypeScript": every npm script that runs a TypeScript file of the scripts or the
// bench runs it as `node --import tsx <file>.ts` (Node from the `node` devDependency, with tsx's
// loader: one process, and it runs the bench's imports of the SDK and shared/, which Node's own type
// stripping cannot: extensionless imports and parameter properties). No bare `tsx`, no plain
// `node <file>.ts`, no bundling a script first to run it.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../../..");
const RUNNER = "node --import tsx";

/** The commands of one npm script that run a .ts file some other way than RUNNER. */
function otherRunners(script: string): string[] {
  return script
    .split(/&&|\|\||;/)
    .map((c) => c.trim().replace(/^(?:exec\s+|\w+=\S*\s+)+/, ""))
    .filter((c) => /\.ts\b/.test(c.split(/\s+/).find((w) => /\.ts$/.test(w)) ?? "") && !c.startsWith(`${RUNNER} `))
    .filter((c) => !/^(tsc|wrangler|vitest|biome)\b/.test(c));
}

describe("one TypeScript runner for the scripts and the bench", () => {
  it("the check sees tsx, plain node and a bundle-then-run, and passes the runner", () => {
    expect(otherRunners("tsx bench/run.ts")).toEqual(["tsx bench/run.ts"]);
    expect(otherRunners("exec node scripts/serve.ts")).toEqual(["node scripts/serve.ts"]);
    expect(otherRunners("esbuild bench/x.ts --bundle --outfile=dist/x.mjs && node dist/x.mjs")).toEqual([
      "esbuild bench/x.ts --bundle --outfile=dist/x.mjs",
    ]);
    expect(otherRunners("npm run -s build:web && node --import tsx scripts/build.ts && node dist/sdk/connect.mjs")).toEqual([]);
  });

  it("every npm script runs its TypeScript with `node --import tsx`", () => {
    const { scripts } = JSON.parse(readFileSync(resolve(root, "package.json"), "utf8")) as { scripts: Record<string, string> };
    const others = Object.entries(scripts).flatMap(([name, s]) => otherRunners(s).map((c) => `${name}: ${c}`));
    expect(others).toEqual([]);
    expect(Object.values(scripts).filter((s) => s.includes(RUNNER)).length).toBeGreaterThan(10);
  });
});
