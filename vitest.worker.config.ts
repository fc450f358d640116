import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

// Layer 2: the Worker and its Durable Objects inside workerd (the Workers vitest pool), with
// eviction and alarms driven directly. The entry is test/worker/entry.ts: the Worker with test
// subclasses of the objects whose outside world a test sets.
export default defineConfig({
  // LOG_LEVEL=warn: one line per request would bury the output (tests that read lines set info).
  // RELAY_LOOPBACK_ONLY: the tests' relay is reached on loopback only, so the status pages are
  // open without ADMIN_TOKEN as on `npm start` (test/worker/status-closed.test.ts sets otherwise).
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      main: "./test/worker/entry.ts",
      miniflare: { bindings: { LOG_LEVEL: "warn", RELAY_LOOPBACK_ONLY: "true" } },
    }),
  ],
  test: {
    include: ["test/worker/**/*.test.ts"],
    testTimeout: 20_000,
    // At least two files at once: vitest's default on a 2-core machine is one, and the files wait
    // on workerd and child processes as much as they compute (measured: 86 → 53 s unit, 192 → 120 s worker).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // An object's own timer (a stats report after activity) that fires while the pool tears a test
    // file's environment down rejects inside the pool's RPC ("Closing rpc while ... was pending"),
    // after every test of the file passed: the pool's teardown, not the relay's error. Every other
    // unhandled error still fails the run.
    onUnhandledError: (error) => error.name !== "EnvironmentTeardownError",
  },
});
