import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// Layer 2: the Worker and its Durable Objects inside workerd (the Workers vitest pool), with
// eviction and alarms driven directly. The entry is test/worker/entry.ts: the Worker with test
// subclasses of the objects whose outside world a test sets.
export default defineConfig({
  // LOG_LEVEL=warn: one line per request would bury the output (tests that read lines set info).
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      main: "./test/worker/entry.ts",
      miniflare: { bindings: { LOG_LEVEL: "warn" } },
    }),
  ],
  test: {
    include: ["test/worker/**/*.test.ts"],
    testTimeout: 20_000,
  },
});
