// "done when": `wrangler deploy --dry-run` works on a fresh clone with no other step.
// The clone is the repository's tracked files as they are in this work tree (what `git clone`
// of this state gives: no dist/, no data/, no .wrangler/), with this checkout's node_modules
// linked in place of `npm ci`. wrangler's [build] must build the static pages itself.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url).pathname;
const clone = mkdtempSync(join(tmpdir(), "edge-relay-clone-"));
afterAll(() => rmSync(clone, { recursive: true, force: true }));

describe("a fresh clone", () => {
  it("`wrangler deploy --dry-run` builds the pages and bundles the Worker with no other step", () => {
    const files = spawnSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" }).stdout.split("\0").filter(Boolean);
    for (const f of files) {
      if (!existsSync(join(root, f))) continue; // deleted in the work tree, not yet committed
      mkdirSync(dirname(join(clone, f)), { recursive: true });
      cpSync(join(root, f), join(clone, f));
    }
    expect(existsSync(join(clone, "dist"))).toBe(false);
    symlinkSync(join(root, "node_modules"), join(clone, "node_modules"));
    const out = join(clone, "out");
    const r = spawnSync(join(root, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", out], {
      cwd: clone,
      encoding: "utf8",
      timeout: 180_000,
      env: {
        ...process.env,
        PATH: `${join(root, "node_modules/.bin")}:${process.env.PATH}`,
        WRANGLER_SEND_METRICS: "false",
        CI: "true",
        NO_COLOR: "1",
      },
    });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain("--dry-run: exiting now.");
    expect(existsSync(join(clone, "dist/web/demo/index.html")) || existsSync(join(clone, "dist/web/index.html"))).toBe(true);
    expect(readFileSync(join(out, "index.js"), "utf8")).toContain("openapi.json");
  }, 240_000);
});
