import { defineConfig } from "vitest/config";

// Layer 3: real WebSocket clients against a real relay process (wrangler dev, or workerd serve
// with RELAY_TARGET=workerd) on a free loopback port.
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.test.ts"],
    globalSetup: ["test/helpers/global-relay.ts"],
    testTimeout: 60_000,
    hookTimeout: 90_000,
    fileParallelism: false,
  },
});
