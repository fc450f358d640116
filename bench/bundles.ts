// Bundle sizes (a figure, not a test): the Worker as `wrangler deploy` would upload it
// (scripts/build.ts, run by the bench before it starts) and the browser client as the demo page
// loads it (web/build.mjs), raw and gzipped.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { BUNDLE_DIR, ROOT } from "../scripts/build";

export function bundleSizes(): { worker: number; workerGzip: number; web: number; webGzip: number } {
  const built = spawnSync(process.execPath, [join(ROOT, "web/build.mjs")], { cwd: ROOT, encoding: "utf8" });
  if (built.status !== 0) throw new Error(`web/build.mjs failed: ${built.stderr}`);
  const worker = readFileSync(join(BUNDLE_DIR, "index.js"));
  const web = readFileSync(join(ROOT, "dist/web/demo/demo.js"));
  return { worker: worker.length, workerGzip: gzipSync(worker).length, web: web.length, webGzip: gzipSync(web).length };
}
