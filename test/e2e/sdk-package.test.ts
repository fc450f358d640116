// The SDK the way an app meets it: `npm pack`, a scratch app outside the repository installs the
// tarball, and (a) a Node script and (b) a page bundled with esbuild and opened in Chromium each
// register two users with the running relay and exchange a message through it. The relay URL is
// given as http:// to one and ws:// to the other: every client takes either spelling.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { chromiumPath, launchChromium, NO_CHROMIUM_MESSAGE } from "../helpers/chromium";

const relay = inject("relayUrl"); // http://127.0.0.1:PORT
const root = new URL("../../", import.meta.url).pathname;
const npm = (args: string[], cwd: string) =>
  execFileSync("npm", args, {
    cwd,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, npm_config_update_notifier: "false" },
  });

// Both sides: Alice sends Bob a note; Bob's listener answers with what arrived. A listener that
// throws (on "registered") must not end the process or the page.
const exchange = `
import { TallyClient, generateSecretKey, getPublicKeyHex, npubEncode } from "edge-relay/tally";
export async function exchange(relayUrl) {
  const alice = new TallyClient({ relayUrl, secretKey: generateSecretKey() });
  const bobKey = generateSecretKey();
  const bob = new TallyClient({ relayUrl, secretKey: bobKey });
  bob.on("registered", () => { throw new Error("an app's listener failing"); });
  const got = new Promise((resolve) => bob.on("message", (m) => resolve(m)));
  await bob.connect();
  await alice.connect();
  await alice.send(npubEncode(getPublicKeyHex(bobKey)), "note", { text: "hello from the package" });
  const m = await got;
  alice.close();
  bob.close();
  return { type: m.type, text: m.payload.text };
}
`;

let app: string;
let tarball: string;
const repoReadme = readFileSync(join(root, "README.md"), "utf8");
let readmeAfterPack: string;

beforeAll(() => {
  app = mkdtempSync(join(tmpdir(), "edge-relay-app-"));
  npm(["pack", "--silent", "--pack-destination", app], root);
  readmeAfterPack = readFileSync(join(root, "README.md"), "utf8");
  tarball = readdirSync(app).find((f) => f.endsWith(".tgz"))!;
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "scratch-app", private: true, type: "module" }));
  // The npm cache already holds the dependencies (the repository's own install).
  npm(["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", join(app, tarball)], app);
  writeFileSync(join(app, "exchange.mjs"), exchange);
}, 240_000);

afterAll(() => rmSync(app, { recursive: true, force: true }));

describe("the SDK as an installed package", () => {
  it("installs with its runtime dependencies only: no hono, no wrangler, no Worker code", () => {
    const installed = readdirSync(join(app, "node_modules"));
    expect(installed).toContain("edge-relay");
    expect(installed).toContain("zod");
    expect(installed).not.toContain("hono");
    expect(installed).not.toContain("wrangler");
    const files = execFileSync("find", ["."], { cwd: join(app, "node_modules/edge-relay"), encoding: "utf8" });
    expect(files).not.toMatch(/workers\/|durable-objects\//);
  });

  it("(a) a Node script imports edge-relay/tally, registers two users and exchanges a message (relay as http://)", () => {
    writeFileSync(
      join(app, "node-app.mjs"),
      `import { exchange } from "./exchange.mjs";\nconsole.log(JSON.stringify(await exchange(process.argv[2])));\n`,
    );
    const r = spawnSync(process.execPath, ["node-app.mjs", relay], { cwd: app, encoding: "utf8", timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0); // an unhandled rejection would have ended it with 1
    expect(JSON.parse(r.stdout.trim().split("\n").pop()!)).toEqual({ type: "note", text: "hello from the package" });
    expect(r.stderr).toContain('edge-relay: a "registered" listener failed');
  });

  it("(b) a page bundled with esbuild from the package runs in Chromium and exchanges a message (relay as ws://)", async (ctx) => {
    if (!chromiumPath) return ctx.skip(NO_CHROMIUM_MESSAGE);
    writeFileSync(
      join(app, "page.mjs"),
      `import { exchange } from "./exchange.mjs";\nimport { DirectMesh } from "edge-relay/webrtc";\nwindow.sdk = { exchange, hasMesh: typeof DirectMesh === "function" };\n`,
    );
    // esbuild resolves from the scratch app, with the browser condition (edge-relay/webrtc is browser-only).
    await build({
      absWorkingDir: app,
      entryPoints: ["page.mjs"],
      outfile: join(app, "page.js"),
      bundle: true,
      format: "iife",
      platform: "browser",
      logLevel: "warning",
    });
    const chrome = await launchChromium();
    try {
      const page = await chrome.context.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      await page.goto(`${relay}/healthz`); // an http://127.0.0.1 origin: a secure context, as an app's page would be
      await page.addScriptTag({ content: readFileSync(join(app, "page.js"), "utf8") });
      const wsUrl = relay.replace(/^http/, "ws");
      const got = await page.evaluate(
        async (u) => ({ ...(await (window as any).sdk.exchange(u)), mesh: (window as any).sdk.hasMesh }),
        wsUrl,
      );
      expect(got).toEqual({ type: "note", text: "hello from the package", mesh: true });
      expect(errors).toEqual([]);
    } finally {
      await chrome.close();
    }
  });

  // docs/sdk.md: every block marked `// example: <name>` runs as written, from the installed package.
  const examples = [...readFileSync(join(root, "docs/sdk.md"), "utf8").matchAll(/```js\n\/\/ example: ([a-z-]+)\n([\s\S]*?)```/g)];
  it("docs/sdk.md has its examples", () =>
    expect(examples.map((m) => m[1])).toEqual([
      "tally",
      "tally-delivery",
      "tally-handlers",
      "tally-signer",
      "passnote",
      "passnote-devices",
      "passnote-adapter",
      "minca-connect",
      "mailbox",
      "minca-host",
    ]));
  for (const [, name, code] of examples) {
    it(`docs/sdk.md example "${name}" runs against the relay and exits 0`, () => {
      writeFileSync(join(app, `example-${name}.mjs`), code);
      const r = spawnSync(process.execPath, [`example-${name}.mjs`], {
        cwd: app,
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, RELAY_URL: relay },
      });
      expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
      expect(r.stderr).toBe("");
      expect(r.stdout.trim()).not.toBe("");
    });
  }

  it("the packed README is the SDK's (clients/README.md), and the repository's README.md is left as it was", () => {
    const packed = readFileSync(join(app, "node_modules/edge-relay/README.md"), "utf8");
    expect(packed).toBe(readFileSync(join(root, "clients/README.md"), "utf8"));
    expect(packed).toContain("npm install /path/to/edge-relay-");
    expect(readmeAfterPack).toBe(repoReadme);
    expect(existsSync(join(root, "dist/pack/README.md"))).toBe(false);
  });

  it("every relative link of the packed Markdown pages leads to a file in the package", () => {
    const pkgDir = join(app, "node_modules/edge-relay");
    const pages = execFileSync("tar", ["-tzf", join(app, tarball)], { encoding: "utf8" })
      .split("\n")
      .filter((f) => f.endsWith(".md"))
      .map((f) => f.replace(/^package\//, ""));
    expect(pages).toEqual(expect.arrayContaining(["README.md", "docs/sdk.md"]));
    for (const page of pages) {
      const text = readFileSync(join(pkgDir, page), "utf8");
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|mailto:|#)/.test(target)) continue;
        expect(existsSync(join(pkgDir, dirname(page), target.split("#")[0])), `${page} links to ${target}`).toBe(true);
      }
    }
  });

  // (With the DOM lib they compile too: the repository's own typecheck and the page test above.)
  it("the declarations compile without the DOM lib (a Node app: lib es2022, @types/node)", () => {
    writeFileSync(
      join(app, "types-check.ts"),
      ["tally", "passnote", "passnote-sqlite", "minca", "mailbox", "node"]
        .map((e, i) => `import * as m${i} from "edge-relay/${e}";\nexport { m${i} };`)
        .join("\n") + "\n",
    );
    for (const lib of [["es2022"]]) {
      writeFileSync(
        join(app, "tsconfig.json"),
        JSON.stringify({
          compilerOptions: {
            target: "es2022",
            module: "nodenext",
            moduleResolution: "nodenext",
            lib,
            types: ["node"],
            typeRoots: [join(root, "node_modules/@types")],
            strict: true,
            noEmit: true,
            skipLibCheck: false,
          },
          files: ["types-check.ts"],
        }),
      );
      const r = spawnSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", app], { cwd: app, encoding: "utf8" });
      expect(r.status, `lib ${lib.join(",")}:\n${r.stdout}${r.stderr}`).toBe(0);
    }
  }, 120_000);

  it("edge-relay/webrtc is browser only: importing it in Node says so", () => {
    const r = (() => {
      try {
        execFileSync(process.execPath, ["-e", 'import("edge-relay/webrtc").then(() => console.log("loaded"))'], {
          cwd: app,
          encoding: "utf8",
          stdio: "pipe",
        });
        return "loaded";
      } catch (e) {
        return String((e as { stderr?: string }).stderr);
      }
    })();
    expect(r).toMatch(/edge-relay\/webrtc is browser only/);
    expect(r).toMatch(/ERR_EDGE_RELAY_BROWSER_ONLY/);
  });
});
