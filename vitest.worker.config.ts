import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// Layer 2: the Worker and its Durable Objects inside workerd (the Workers vitest pool), with
// eviction and alarms driven directly.
export default defineConfig({
  // LOG_LEVEL=warn: one line per request would bury the output (tests that read lines set info).
  plugins: [cloudflareTest({ wrangler: { configPath: "./wrangler.toml" }, miniflare: { bindings: { LOG_LEVEL: "warn" } } })],
  test: {
    include: ["test/worker/**/*.test.ts"],
    testTimeout: 20_000,
  },
});
