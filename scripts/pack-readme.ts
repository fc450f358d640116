// `npm pack` (and `npm publish`) pack the repository's README.md whatever "files" says, and that
// README is the operator's. prepack runs `swap`: README.md is kept aside in dist/pack/ and
// clients/README.md (the SDK's) takes its place; postpack runs `restore`. A pack that failed
// between the two leaves the swap in place: the next `swap` or `restore` mends it, and
// `git checkout README.md` always does.
// Runs under plain Node 22 (type stripping): erasable TypeScript only.
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const README = join(ROOT, "README.md");
const SDK_README = join(ROOT, "clients", "README.md");
const KEPT = join(ROOT, "dist", "pack", "README.md");

const isSdkReadme = (path: string) => readFileSync(path, "utf8") === readFileSync(SDK_README, "utf8");

export function swap(): void {
  if (isSdkReadme(README)) {
    if (!existsSync(KEPT)) throw new Error("README.md is the SDK's and the repository's is not in dist/pack: run `git checkout README.md`");
    return; // an earlier pack stopped before postpack: already swapped
  }
  mkdirSync(dirname(KEPT), { recursive: true });
  copyFileSync(README, `${KEPT}.tmp`);
  renameSync(`${KEPT}.tmp`, KEPT);
  writeFileSync(`${README}.tmp`, readFileSync(SDK_README));
  renameSync(`${README}.tmp`, README);
}

export function restore(): void {
  if (existsSync(KEPT)) renameSync(KEPT, README);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const what = process.argv[2];
  if (what === "swap") swap();
  else if (what === "restore") restore();
  else {
    console.error("usage: node scripts/pack-readme.ts swap|restore");
    process.exit(2);
  }
}
