// The Tally SDK bundled as an app on Node 20 would load it (one ES module, no TypeScript), for the
// end-to-end tests that run device programs in processes of their own.
import { join } from "node:path";
import { build } from "esbuild";

/** The repository's root. */
export const REPO_ROOT = new URL("../../", import.meta.url).pathname;

/** Bundles the Tally SDK into `dir` as tally.mjs. */
export async function sdkBundleIn(dir: string): Promise<void> {
  await build({
    entryPoints: [join(REPO_ROOT, "clients/tally/index.ts")],
    outfile: join(dir, "tally.mjs"),
    bundle: true,
    format: "esm",
    platform: "neutral",
    mainFields: ["module", "main"],
    logLevel: "error",
  });
}
