// The limits table (docs/limits.md) is the constants in shared/limits.ts, name for name; the README
// names the set-up commands and cites only documents of the repository.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../shared/limits";
import { VERSION } from "../../server/info";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const limitsPage = readFileSync(new URL("../../docs/limits.md", import.meta.url), "utf8");
const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));

describe("documentation", () => {
  it("docs/limits.md lists every limit with its value, and the README links to it", () => {
    expect(readme).toContain("(docs/limits.md)");
    for (const [group, limits] of Object.entries(LIMITS)) {
      for (const [name, value] of Object.entries(limits as Record<string, unknown>)) {
        if (typeof value !== "number") continue;
        expect(limitsPage, `${group}.${name}`).toContain(`| \`${group}.${name}\` | ${value} |`);
      }
    }
  });

  it("the information document's version is the package version", () => {
    expect(VERSION).toBe(pkg.version);
  });

  it("the README names the two set-up commands, and the development server", () => {
    expect(readme).toContain("npm install && npm start");
    expect(readme).toContain("npm test");
    expect(readme).toContain("npm run dev");
  });
});

// The documents a reader gets: README.md, CHANGELOG.md, SECURITY.md, BENCHMARKS.md, every page of
// docs/ and bench/results/, and the scripts' comments. They say each rule in the project's own
// words ("the Tally protocol, §6.2", "the relay's design"): a document that is not in the
// repository, or an issue number, means nothing to a reader of the repository.
const rootDir = new URL("../../", import.meta.url).pathname;
const documents = [
  "README.md",
  "CHANGELOG.md",
  "clients/README.md",
  "SECURITY.md",
  "BENCHMARKS.md",
  ...readdirSync(join(rootDir, "bench/results"))
    .map((f) => `bench/results/${f}`)
    .filter((f) => f.endsWith(".md")),
  ...readdirSync(join(rootDir, "docs"), { recursive: true })
    .map((f) => `docs/${f}`)
    .filter((f) => f.endsWith(".md")),
  ...readdirSync(join(rootDir, "scripts")).map((f) => `scripts/${f}`),
];

describe("the documents cite only what is in the repository", () => {
  for (const file of documents) {
    it(`${file} cites no design document, seed or issue number that is not in the repository`, () => {
      const text = readFileSync(join(rootDir, file), "utf8");
      const cites = [
        ...text.matchAll(/\bDESIGN(\.md)?\b/g),
        ...text.matchAll(/\bseeds?\s+(\d|§|section)/gi),
        ...text.matchAll(/\bthe seeds?\b(?!\s+(of|for)\b)/gi),
        ...text.matchAll(/\bissues?\s+#?\d+/gi),
        ...text.matchAll(/\b00\d_[0-9a-f]{8,}\.txt\b/g),
      ].map((m) => `${m[0]} at ${text.slice(0, m.index).split("\n").length}`);
      expect(cites).toEqual([]);
    });
  }

  // Code comments and test names say "the Tally protocol §6.2" too: no file of the repository
  // cites the design document, a protocol file by its number or name, or an issue.
  it("no tracked file (code comments and test names included) cites a design document, seed number or issue number", () => {
    const tracked = execFileSync("git", ["ls-files", "-z"], { cwd: rootDir, encoding: "utf8" })
      .split("\0")
      .filter((f) => f !== "" && f !== "package-lock.json" && f !== "test/unit/docs.test.ts" && !f.startsWith("test/fixtures/"))
      .filter((f) => /\.(ts|mts|mjs|js|md|toml|json|html|css|sh|yml|yaml|txt)$|^[^.]+$/.test(f) && existsSync(join(rootDir, f)));
    expect(tracked.length).toBeGreaterThan(300);
    const cites: string[] = [];
    for (const file of tracked) {
      const text = readFileSync(join(rootDir, file), "utf8");
      for (const m of [
        ...text.matchAll(/\bDESIGN(\.md)?\b/g),
        ...text.matchAll(/\bseeds?\s+(0\d\d|§|section)/gi),
        ...text.matchAll(/\bissues?\s+#?\d+/gi),
        ...text.matchAll(/\b00\d_[0-9a-f]{8,}\.txt\b/g),
      ])
        cites.push(`${file}:${text.slice(0, m.index).split("\n").length}: ${m[0]}`);
    }
    expect(cites).toEqual([]);
  });

  // npm prints a two-line banner before the script's own output unless -s is given: `npm start |
  // jq` stops at line 1. Every example that pipes the relay's log into jq must say `npm -s start`.
  for (const file of documents.filter((f) => f.endsWith(".md"))) {
    it(`the jq examples of ${file} pipe \`npm -s start\` (npm's banner is not JSON)`, () => {
      const text = readFileSync(join(rootDir, file), "utf8");
      const piped = [...text.matchAll(/\bnpm\s+((?:-\S+\s+)*)start\b[^\n|]*\|\s*jq\b/g)];
      for (const [line, flags] of piped) expect(flags, line).toMatch(/(^|\s)(-s|--silent)\s/);
    });
  }

  // (clients/README.md is packed as the package's README: its links are checked in the package,
  // test/e2e/sdk-package.test.ts.)
  for (const file of documents.filter((f) => f.endsWith(".md") && f !== "clients/README.md")) {
    it(`every relative link of ${file} leads to a file of the repository`, () => {
      const text = readFileSync(join(rootDir, file), "utf8");
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|mailto:|#)/.test(target)) continue;
        expect(existsSync(join(rootDir, dirname(file), target.split("#")[0])), `${file} links to ${target}`).toBe(true);
      }
    });
  }
});

describe("the README for a newcomer", () => {
  const firstScreen = readme.slice(0, readme.indexOf("## Contents"));

  it("its first screen says what Tally, Passnote and Minca are, and how to run, try and test the relay", () => {
    for (const app of ["**Tally**", "**Passnote**", "**Minca**"]) expect(firstScreen).toContain(app);
    for (const step of ["npm install && npm start", "/demo/", "/connect/", "curl ", "npm test", "docs/sdk.md"])
      expect(firstScreen).toContain(step);
    expect(firstScreen.split("\n").length).toBeLessThan(45);
  });

  it("its first screen says who it is for: app developers, and people who run a relay", () => {
    expect(firstScreen).toContain("**app developers**");
    expect(firstScreen).toContain("**people who run a relay**");
  });

  it("has a table of contents, and the sections others add to (Settings, Layout, Running it in public, Self-hosting)", () => {
    for (const h of ["## Contents", "## Settings", "## Layout", "### Running it in public", "## Self-hosting", "## Upgrading"])
      expect(readme).toContain(`\n${h}\n`);
  });

  it("keeps release notes in CHANGELOG.md, not in the README", () => {
    expect(readme).not.toMatch(/^## What is new/m);
    expect(readme).toContain("(CHANGELOG.md)");
  });

  it("its examples are ES modules with every import used, sending to no placeholder npub", () => {
    for (const [, code] of readme.matchAll(/```(?:js|ts)\n([\s\S]*?)```/g)) {
      if (!code.includes("import ")) continue;
      expect(code).toMatch(/ES module|\.mjs/);
      expect(code).not.toMatch(/npub1\.\.\./);
      for (const [, names] of code.matchAll(/import \{([^}]+)\} from/g)) {
        for (const name of names
          .split(",")
          .map((n) => n.trim())
          .filter(Boolean)) {
          const uses = code.split(new RegExp(`\\b${name}\\b`)).length - 1;
          expect(uses, `${name} is imported and not used`).toBeGreaterThan(1);
        }
      }
    }
  });
});
