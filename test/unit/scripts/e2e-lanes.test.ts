// scripts/test-e2e-lanes.ts runs the end-to-end files in two lanes at once (vitest.e2e.config.ts):
// the `own` lane has no shared relay, so each file in it must exist and start relays of its own
// without reading the shared one's address; every other file runs in the `shared` lane.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { OWN_RELAY_FILES } from "../../../vitest.e2e.config";

const root = resolve(import.meta.dirname, "../../..");

describe("the end-to-end lanes", () => {
  it("every file of the own lane exists, starts a relay of its own or none, and never asks for the shared relay", () => {
    for (const file of OWN_RELAY_FILES) {
      expect(existsSync(join(root, file)), file).toBe(true);
      const text = readFileSync(join(root, file), "utf8");
      expect(text, file).not.toMatch(/inject\(\s*["']relay(Url|Target)["']\s*\)/);
    }
  });

  it("the two lanes together hold every end-to-end file once", () => {
    const all = readdirSync(join(root, "test/e2e"))
      .filter((f) => f.endsWith(".test.ts"))
      .map((f) => `test/e2e/${f}`);
    const own = new Set(OWN_RELAY_FILES);
    expect(own.size).toBe(OWN_RELAY_FILES.length);
    const shared = all.filter((f) => !own.has(f));
    expect([...shared, ...OWN_RELAY_FILES].sort()).toEqual(all.sort());
    expect(shared.length).toBeGreaterThan(0);
  });
});
