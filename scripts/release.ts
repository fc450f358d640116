// `npm run release -- X.Y.Z`: makes a release of the relay (docs/releasing.md). It
//
//   1. checks X.Y.Z is semver and newer than the last release in CHANGELOG.md;
//   2. checks CHANGELOG.md's "Unreleased" section says what an upgrade changes on disk (its
//      "### Upgrading" subsection, with an "On disk" entry);
//   3. sets the version in package.json, package-lock.json and server/info.ts (the information
//      document's `version`, /metrics' build_info, the OpenAPI document's);
//   4. turns "## Unreleased" into "## X.Y.Z (date)" under a new, empty "## Unreleased";
//   5. prints the commit and the tag to make (it makes neither: the maintainer does, and pushes).
//
// `--dry-run` prints what would change and writes nothing.
// Runs under plain Node 22 (type stripping): erasable TypeScript only.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./build.ts";

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/;

/** -1, 0 or 1 as a is older than, the same as or newer than b (X.Y.Z only). */
export function compareVersions(a: string, b: string): number {
  const [x, y] = [a, b].map((v) => v.split(".").map(Number));
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
  return 0;
}

/** The newest released version in a CHANGELOG ("## X.Y.Z" headings), or null. */
export function lastRelease(changelog: string): string | null {
  const versions = [...changelog.matchAll(/^## (\d+\.\d+\.\d+)\b/gm)].map((m) => m[1]);
  return versions.sort(compareVersions).at(-1) ?? null;
}

/** The "## Unreleased" section's text (without its heading), or null. */
export function unreleasedSection(changelog: string): string | null {
  const m = /^## Unreleased[ \t]*\n([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(changelog);
  return m ? m[1] : null;
}

/** Why the CHANGELOG cannot be released as `version`, or null when it can. */
export function releaseProblem(changelog: string, version: string): string | null {
  if (!SEMVER.test(version)) return `"${version}" is not a version (X.Y.Z, semver)`;
  const last = lastRelease(changelog);
  if (last && compareVersions(version, last) <= 0) return `${version} is not newer than the last release, ${last}`;
  const section = unreleasedSection(changelog);
  if (section === null) return 'CHANGELOG.md has no "## Unreleased" section';
  if (section.trim() === "") return 'CHANGELOG.md\'s "Unreleased" section is empty: nothing to release';
  if (!/^### Upgrading\b/m.test(section))
    return 'CHANGELOG.md\'s "Unreleased" section has no "### Upgrading" subsection: say what an upgrade changes (on disk, in settings)';
  if (!/\bOn disk\b/i.test(section.slice(section.search(/^### Upgrading\b/m))))
    return 'CHANGELOG.md\'s "### Upgrading" says nothing "On disk": say what the upgrade changes in the data directory (or "nothing")';
  return null;
}

/** The CHANGELOG with "## Unreleased" released as `version` on `date` (YYYY-MM-DD), a new empty Unreleased above. */
export function releaseChangelog(changelog: string, version: string, date: string): string {
  return changelog.replace(/^## Unreleased[ \t]*$/m, `## Unreleased\n\n## ${version} (${date})`);
}

/** package.json's or package-lock.json's text with the package's own version set (its dependencies' untouched). */
export function setPackageVersion(text: string, version: string, lock: boolean): string {
  const json = JSON.parse(text);
  json.version = version;
  if (lock && json.packages?.[""]) json.packages[""].version = version;
  return `${JSON.stringify(json, null, 2)}\n`;
}

/** server/info.ts with its VERSION constant set. */
export function setInfoVersion(text: string, version: string): string {
  const out = text.replace(/^export const VERSION = "[^"]*";$/m, `export const VERSION = "${version}";`);
  if (out === text && !text.includes(`export const VERSION = "${version}";`)) throw new Error("server/info.ts: no VERSION constant found");
  return out;
}

function main(argv: string[]): number {
  const dryRun = argv.includes("--dry-run");
  const version = argv.find((a) => !a.startsWith("--"));
  if (!version) {
    console.error("usage: npm run release -- X.Y.Z [--dry-run]   (docs/releasing.md)");
    return 2;
  }
  const path = (f: string) => join(ROOT, f);
  const changelog = readFileSync(path("CHANGELOG.md"), "utf8");
  const problem = releaseProblem(changelog, version);
  if (problem) {
    console.error(`cannot release: ${problem}`);
    return 2;
  }
  const date = new Date().toISOString().slice(0, 10);
  const writes: Array<[string, string]> = [
    ["CHANGELOG.md", releaseChangelog(changelog, version, date)],
    ["package.json", setPackageVersion(readFileSync(path("package.json"), "utf8"), version, false)],
    ["package-lock.json", setPackageVersion(readFileSync(path("package-lock.json"), "utf8"), version, true)],
    ["server/info.ts", setInfoVersion(readFileSync(path("server/info.ts"), "utf8"), version)],
  ];
  for (const [file, text] of writes) {
    if (dryRun) console.log(`would write ${file}`);
    else writeFileSync(path(file), text);
  }
  console.log(
    [
      `${dryRun ? "would release" : "released"} ${version} (${date}). Now check the diff, then:`,
      "",
      `  git commit -am "Release ${version}"`,
      `  git tag -a v${version} -m "edge-relay ${version}"`,
      `  git push && git push origin v${version}`,
      "",
      "A build from the tagged commit reports that version and commit in the information document and build_info.",
    ].join("\n"),
  );
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exit(main(process.argv.slice(2)));
