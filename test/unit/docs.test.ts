// The README's limits table is the constants in shared/limits.ts, name for name.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../shared/limits";
import { VERSION } from "../../server/info";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));

describe("documentation", () => {
  it("the README lists every limit with its value", () => {
    for (const [group, limits] of Object.entries(LIMITS)) {
      for (const [name, value] of Object.entries(limits as Record<string, unknown>)) {
        if (typeof value !== "number") continue;
        expect(readme, `${group}.${name}`).toContain(`| \`${group}.${name}\` | ${value} |`);
      }
    }
  });

  it("the information document's version is the package version", () => {
    expect(VERSION).toBe(pkg.version);
  });

  it("the README names the two set-up commands, and the development server", () => {
    expect(readme).toContain("npm install && npm start");
    expect(readme).toContain("npm test");
    expect(readme).toContain("npm run dev");
  });
});
