import { defineConfig } from "vitest/config";

// Layer 1: pure modules (shared/, clients/) under Node.
export default defineConfig({
  test: {
    include: ["test/unit/**/*.test.ts"],
    testTimeout: 20_000,
  },
});
