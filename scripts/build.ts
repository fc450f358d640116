// Builds the Worker bundle exactly as `wrangler deploy` would upload it (wrangler's own bundler,
// reading wrangler.toml), into dist/worker/. `npm run build`; scripts/serve.ts calls it on start.
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const BUNDLE_DIR = join(ROOT, "dist", "worker");

/**
 * The commit the checkout is at (12 hex digits, "+dirty" when tracked files changed), or "unknown"
 * outside a git checkout. Written into the bundle at build time: the Worker has no git at runtime.
 */
export function buildCommit(): string {
  const head = spawnSync("git", ["rev-parse", "--short=12", "HEAD"], { cwd: ROOT, encoding: "utf8" });
  if (head.status !== 0 || !/^[0-9a-f]{7,40}$/.test(head.stdout.trim())) return "unknown";
  const dirty = spawnSync("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: ROOT, encoding: "utf8" });
  return `${head.stdout.trim()}${dirty.status === 0 && dirty.stdout.trim() !== "" ? "+dirty" : ""}`;
}

/** wrangler's arguments that write the commit into the bundle (server/info.ts reads BUILD_COMMIT). */
export function commitDefine(commit = buildCommit()): string[] {
  return ["--define", `BUILD_COMMIT:${JSON.stringify(commit)}`];
}

/**
 * `readable`: not minified (wrangler.toml's `minify` overridden), for CPU profiles, whose function
 * names are the source's only then (a minified bundle keeps names for stack traces, not profiles).
 */
export function buildWorker(outDir = BUNDLE_DIR, opts: { readable?: boolean } = {}): void {
  rmSync(outDir, { recursive: true, force: true });
  const res = spawnSync(
    process.execPath,
    [
      join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js"),
      "deploy",
      "--dry-run",
      "--outdir",
      outDir,
      ...commitDefine(),
      ...(opts.readable ? ["--no-minify"] : []),
    ],
    {
      cwd: ROOT,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_LOG: "warn", NO_COLOR: "1" },
      encoding: "utf8",
    },
  );
  if (res.status !== 0) {
    throw new Error(`wrangler could not build the Worker (exit ${res.status}):\n${res.stdout}${res.stderr}`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  buildWorker();
  console.log(`built ${BUNDLE_DIR}`);
}
