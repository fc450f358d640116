import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

// Layer 1: pure modules (shared/, clients/) under Node.
export default defineConfig({
  plugins: [
    {
      // .sql files load as text, as the Worker bundle's Text rule does.
      name: "sql-as-text",
      load(id) {
        if (id.endsWith(".sql")) return `export default ${JSON.stringify(readFileSync(id, "utf8"))};`;
      },
    },
  ],
  test: {
    include: ["test/unit/**/*.test.ts"],
    setupFiles: ["test/helpers/fast-check-seed.ts"],
    testTimeout: 20_000,
    // At least two files at once: vitest's default on a 2-core machine is one, and the files wait
    // on workerd and child processes as much as they compute (measured: 86 → 53 s unit, 192 → 120 s worker).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // One Node process per vitest worker for many files, not one per file: each file then imports
    // only what the files before it did not (measured back to back on a loaded machine: 278 s →
    // 120 s wall, 146 s → 63 s CPU). A test that changes a global (WebSocket, the timers) puts it
    // back in afterEach / finally, as the files do.
    isolate: false,
  },
});
