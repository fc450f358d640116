import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

// Layer 2: the Worker and its Durable Objects inside workerd (the Workers vitest pool), with
// eviction and alarms driven directly. The entry is test/worker/entry.ts: the Worker with test
// subclasses of the objects whose outside world a test sets.
//
// One runtime for many files: the pool starts a workerd (Miniflare) for each runner, and an
// isolated runner (vitest's default) is one file, so each file paid about 3 s for a runtime and
// for importing the whole Worker again. The `shared` project runs its files on one runtime per
// vitest worker (isolate: false), one file after another: the Worker's modules are imported once,
// and the files meet in the same storage and isolate memory. So a test names its own objects
// (fresh keys, topics, rooms) and its own client address (test/helpers/client-address.ts), as it
// would on a real relay. The files below assert on what is one per relay (the storage ledger's
// totals and audit, the stats object's counts and alarms, the shared client's count of wrong
// credentials): each gets a runtime of its own, as in the e2e layer's own-relay lane.
export const OWN_RUNTIME_FILES = [
  "test/worker/metrics.test.ts",
  "test/worker/object-usage.test.ts",
  "test/worker/operator-lockout.test.ts",
  "test/worker/relay-stats.test.ts",
  "test/worker/storage-totals-rows.test.ts",
  "test/worker/storage-totals-slack.test.ts",
  "test/worker/storage-totals.test.ts",
  "test/worker/tally-ban.test.ts",
];

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
    testTimeout: 20_000,
    // At least two files at once: vitest's default on a 2-core machine is one, and the files wait
    // on workerd and child processes as much as they compute (measured: 86 → 53 s unit, 192 → 120 s worker).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // An object's own timer (a stats report after activity) that fires while the pool tears a test
    // file's environment down rejects inside the pool's RPC ("Closing rpc while ... was pending"),
    // after every test of the file passed: the pool's teardown, not the relay's error. Every other
    // unhandled error still fails the run.
    onUnhandledError: (error) => error.name !== "EnvironmentTeardownError",
    projects: [
      {
        extends: true,
        test: { name: "shared", include: ["test/worker/**/*.test.ts"], exclude: OWN_RUNTIME_FILES, isolate: false },
      },
      { extends: true, test: { name: "own", include: OWN_RUNTIME_FILES, isolate: true } },
    ],
  },
});
