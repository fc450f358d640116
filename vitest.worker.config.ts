import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// Layer 2: the Worker and its Durable Objects inside workerd (the Workers vitest pool), with
// eviction and alarms driven directly. The entry is test/worker/entry.ts: the Worker with test
// subclasses of the objects whose outside world a test sets.
export default defineConfig({
  plugins: [cloudflareTest({ wrangler: { configPath: "./wrangler.toml" }, main: "./test/worker/entry.ts" })],
  test: {
    include: ["test/worker/**/*.test.ts"],
    testTimeout: 20_000,
  },
});
