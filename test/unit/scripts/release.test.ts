// Releases (docs/releasing.md): a version that changes with every release, a CHANGELOG section per
// release saying what an upgrade changes on disk, and the version and commit in what the relay
// reports. scripts/release.ts does the edits; the tag is the maintainer's.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildCommit, commitDefine, ROOT } from "../../../scripts/build";
import {
  compareVersions,
  lastRelease,
  releaseChangelog,
  releaseProblem,
  setInfoVersion,
  setPackageVersion,
  unreleasedSection,
} from "../../../scripts/release";
import { COMMIT, relayInfo, VERSION } from "../../../server/info";

const changelog = readFileSync(join(ROOT, "CHANGELOG.md"), "utf8");
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));

const sample = `# Changelog

## Unreleased

### The relay

- something

### Upgrading

- On disk: nothing changes.

## 0.1.0

The first version.
`;

describe("releases", () => {
  it("the package's version is the information document's, and no older than the last release in CHANGELOG.md", () => {
    expect(VERSION).toBe(pkg.version);
    expect(relayInfo({ name: "x" }).version).toBe(pkg.version);
    expect(compareVersions(pkg.version, lastRelease(changelog) ?? "0.0.0")).toBeGreaterThanOrEqual(0);
  });

  it("CHANGELOG.md's Unreleased section can be released as the package's version: it says what an upgrade changes on disk", () => {
    if (lastRelease(changelog) === pkg.version) return; // released already: the next release's notes come later
    expect(releaseProblem(changelog, pkg.version)).toBe(null);
  });

  it("release refuses a version that is not semver or not newer, and notes without an Upgrading section saying what changes on disk", () => {
    expect(releaseProblem(sample, "0.2")).toMatch(/not a version/);
    expect(releaseProblem(sample, "0.1.0")).toMatch(/not newer than the last release, 0.1.0/);
    expect(releaseProblem(sample.replace("### Upgrading", "### Other"), "0.2.0")).toMatch(/no "### Upgrading"/);
    expect(releaseProblem(sample.replace("On disk: nothing", "Nothing"), "0.2.0")).toMatch(/nothing "On disk"/);
    expect(releaseProblem(sample.replace(/## Unreleased[\s\S]*?(?=## 0\.1\.0)/, "## Unreleased\n\n"), "0.2.0")).toMatch(/empty/);
    expect(releaseProblem(sample, "0.2.0")).toBe(null);
    expect(compareVersions("0.10.0", "0.9.9")).toBe(1);
  });

  it("release turns Unreleased into the version's section under a new empty Unreleased, and sets the version in package.json, the lock and server/info.ts", () => {
    const out = releaseChangelog(sample, "0.2.0", "2026-12-07");
    expect(out).toContain("## Unreleased\n\n## 0.2.0 (2026-12-07)\n\n### The relay");
    expect(lastRelease(out)).toBe("0.2.0");
    expect(unreleasedSection(out)?.trim()).toBe("");
    expect(JSON.parse(setPackageVersion('{"name":"edge-relay","version":"0.1.0","dependencies":{"zod":"^4"}}', "0.2.0", false))).toEqual({
      name: "edge-relay",
      version: "0.2.0",
      dependencies: { zod: "^4" },
    });
    const lock = JSON.parse(
      setPackageVersion(
        JSON.stringify({ version: "0.1.0", packages: { "": { version: "0.1.0" }, "node_modules/a": { version: "1.0.0" } } }),
        "0.2.0",
        true,
      ),
    );
    expect([lock.version, lock.packages[""].version, lock.packages["node_modules/a"].version]).toEqual(["0.2.0", "0.2.0", "1.0.0"]);
    expect(setInfoVersion('x\nexport const VERSION = "0.1.0";\ny', "0.2.0")).toBe('x\nexport const VERSION = "0.2.0";\ny');
  });

  it("npm run release -- <version> --dry-run writes nothing and names the tag to make", () => {
    const next = pkg.version === lastRelease(changelog) ? pkg.version.replace(/\d+$/, (n: string) => String(Number(n) + 1)) : pkg.version;
    const r = spawnSync(process.execPath, [join(ROOT, "scripts/release.ts"), next, "--dry-run"], { cwd: ROOT, encoding: "utf8" });
    if (releaseProblem(changelog, next) === null) {
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toContain(`git tag -a v${next}`);
    } else expect(r.status).toBe(2);
    expect(readFileSync(join(ROOT, "CHANGELOG.md"), "utf8")).toBe(changelog);
  });

  it("the build writes the checkout's commit into the bundle: the information document's commit and build_info carry it", () => {
    expect(buildCommit()).toMatch(/^([0-9a-f]{12}(\+dirty)?|unknown)$/);
    expect(commitDefine("0123456789ab")).toEqual(["--define", 'BUILD_COMMIT:"0123456789ab"']);
    // Built without the define (as here, under vitest), the relay says so rather than guessing.
    expect(COMMIT).toBe("unknown");
    expect(relayInfo({ name: "x" }).commit).toBe(COMMIT);
  });
});
