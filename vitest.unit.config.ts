import { readFileSync } from "node:fs";
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
  },
});
