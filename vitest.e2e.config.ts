import { configDefaults, defineConfig } from "vitest/config";

// Layer 3: real WebSocket clients against a real relay process (wrangler dev, or workerd serve
// with RELAY_TARGET=workerd) on a free loopback port. Files run one at a time.
//
// E2E_LANE splits the files in two lanes that `npm test` runs at the same time
// (scripts/test-e2e-lanes.ts): `own`, the files below, which start relays of their own and never
// use the shared one (restarts, kills, launcher settings, other data directories), and `shared`,
// every other file, against the one relay the global setup starts. Unset: every file, one lane.
export const OWN_RELAY_FILES = [
  "test/e2e/admin-accounts.test.ts",
  "test/e2e/admin-api.test.ts",
  "test/e2e/client-shares.test.ts",
  "test/e2e/deploy.test.ts",
  "test/e2e/disk-sweep.test.ts",
  "test/e2e/hostile.test.ts",
  "test/e2e/launcher.test.ts",
  "test/e2e/minca-host.test.ts",
  "test/e2e/out-of-resources.test.ts",
  "test/e2e/restart.test.ts",
  "test/e2e/status-login.test.ts",
  "test/e2e/storage-totals.test.ts",
  "test/e2e/systemd-recipe.test.ts",
  "test/e2e/tally-chaos.test.ts",
];

const lane = process.env.E2E_LANE;
if (lane !== undefined && lane !== "own" && lane !== "shared") throw new Error(`E2E_LANE must be own or shared, not ${lane}`);

export default defineConfig({
  test: {
    include: lane === "own" ? OWN_RELAY_FILES : ["test/e2e/**/*.test.ts"],
    exclude: [...configDefaults.exclude, ...(lane === "shared" ? OWN_RELAY_FILES : [])],
    // The own lane starts no shared relay (its files start theirs on the bundle the lanes script built).
    globalSetup: lane === "own" ? [] : ["test/helpers/global-relay.ts"],
    testTimeout: 60_000,
    hookTimeout: 90_000,
    fileParallelism: false,
  },
});
