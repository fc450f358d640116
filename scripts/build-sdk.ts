// `npm run build:sdk` (and `npm pack`, by prepack): the client SDK as a package. Each entry point
// is bundled to one ES module in dist/sdk (esbuild, with code shared between entries split into
// chunks, and the runtime dependencies @noble/*, @scure/base and zod left as imports), its
// declarations are emitted by tsc (tsconfig.sdk.json) into dist/sdk/types with relative imports
// given the `.js` extension Node's resolution wants, and the connect CLI is bundled whole
// (its WebSocket included, for Node 20) into dist/sdk/connect.mjs, its sibling the move CLI into
// dist/sdk/move.mjs. Nothing here imports the
// Worker, hono or a Durable Object: a test (test/unit/scripts/sdk-package.test.ts) checks it.
// Runs under plain Node 22 (type stripping): erasable TypeScript only.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const SDK_DIR = join(ROOT, "dist", "sdk");

/** Subpath of the package -> entry module. */
export const SDK_ENTRIES: Record<string, string> = {
  tally: "clients/tally/index.ts",
  webrtc: "clients/tally/webrtc.ts",
  passnote: "clients/passnote/index.ts",
  minca: "clients/minca/index.ts",
  mailbox: "clients/mailbox/index.ts",
  node: "clients/node/file-key-value.ts",
  "passnote-sqlite": "clients/passnote/stores/sqlite.ts",
};

const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { dependencies: Record<string, string> };

export async function buildSdk(): Promise<void> {
  rmSync(SDK_DIR, { recursive: true, force: true });
  const result = await build({
    entryPoints: Object.fromEntries(Object.entries(SDK_ENTRIES).map(([name, file]) => [name, join(ROOT, file)])),
    outdir: SDK_DIR,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    external: [...Object.keys(pkg.dependencies).map((d) => `${d}`), ...Object.keys(pkg.dependencies).map((d) => `${d}/*`), "node:*"],
    chunkNames: "chunks/[name]-[hash]",
    metafile: true,
    logLevel: "warning",
  });
  for (const input of Object.keys(result.metafile.inputs)) {
    if (/(^|\/)(workers|durable-objects)\/|node_modules\/hono\//.test(input)) throw new Error(`the SDK must not include ${input}`);
  }
  await buildConnectCli();
  execFileSync(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", join(ROOT, "tsconfig.sdk.json")], {
    stdio: "inherit",
  });
  addJsExtensions(join(SDK_DIR, "types"));
  addWebGlobals(join(SDK_DIR, "types"));
  writeFileSync(join(SDK_DIR, "webrtc-node.js"), WEBRTC_IN_NODE);
}

/**
 * What `import "edge-relay/webrtc"` gives in Node (the `node` export condition): a clear error
 * instead of Node's "not defined by exports". DirectMesh needs the browser's RTCPeerConnection.
 */
export const WEBRTC_IN_NODE = `// edge-relay/webrtc is browser only (the package's "browser" export condition).
const error = new Error(
  "edge-relay/webrtc is browser only: DirectMesh needs the browser's RTCPeerConnection. " +
    "In Node, use edge-relay/tally (the relay carries every message); for a page, bundle with the \\"browser\\" condition (esbuild --platform=browser, Vite, webpack).",
);
error.code = "ERR_EDGE_RELAY_BROWSER_ONLY";
throw error;
`;

/**
 * The web platform types the declarations name that a Node app compiled without the DOM lib does
 * not have (IndexedDB, WebCrypto keys, Web Storage), declared empty; where the full ones exist (the DOM
 * lib, @types/node, workerd's types) these merge with them. Every entry point's declarations reference it.
 */
const WEB_GLOBALS = `// Minimal shapes of web platform types the SDK's declarations name, for apps compiled without
// the DOM lib (a Node app). With the DOM lib (or workerd's types) they merge with the full ones.
interface CryptoKey {}
interface JsonWebKey {}
interface IDBFactory {}
interface Storage {}
`;

function addWebGlobals(typesDir: string): void {
  writeFileSync(join(typesDir, "web-globals.d.ts"), WEB_GLOBALS);
  for (const entry of Object.values(SDK_ENTRIES)) {
    const path = join(typesDir, entry.replace(/\.ts$/, ".d.ts"));
    const rel = relative(dirname(path), join(typesDir, "web-globals.d.ts")).split(sep).join("/");
    writeFileSync(path, `/// <reference path="${rel}" />\n${readFileSync(path, "utf8")}`);
  }
}

/** The connect CLI and its sibling the move CLI, bundled whole (the package's bins, `npm run connect`, `npm run move`). */
export async function buildConnectCli(): Promise<string> {
  await buildCli("clients/minca/move-cli.ts", "move.mjs");
  return buildCli("clients/minca/connect-cli.ts", "connect.mjs");
}

async function buildCli(entry: string, name: string): Promise<string> {
  const outfile = join(SDK_DIR, name);
  await build({
    entryPoints: [join(ROOT, entry)],
    outfile,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    // ws is CommonJS: give the bundle a require for the Node built-ins it loads.
    banner: {
      js: '#!/usr/bin/env node\nimport { createRequire as __sdkRequire } from "node:module";\nconst require = __sdkRequire(import.meta.url);',
    },
    logLevel: "warning",
  });
  chmodSync(outfile, 0o755);
  return outfile;
}

/** Rewrites `from "./x"` in emitted declarations to "./x.js" (or "./x/index.js"), as Node's ESM resolution needs. */
function addJsExtensions(dir: string): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      addJsExtensions(path);
      continue;
    }
    if (!name.endsWith(".d.ts")) continue;
    const text = readFileSync(path, "utf8").replace(
      /((?:from|import)\s*\(?\s*")(\.{1,2}\/[^"]*)(")/g,
      (all, pre: string, spec: string, post: string) => {
        const base = resolve(dirname(path), spec.replace(/\.ts$/, ""));
        if (existsSync(`${base}.d.ts`)) return `${pre}${spec.replace(/\.ts$/, "")}.js${post}`;
        if (existsSync(join(base, "index.d.ts"))) return `${pre}${spec}/index.js${post}`;
        return all;
      },
    );
    writeFileSync(path, text);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv.includes("--cli")) await buildConnectCli();
  else await buildSdk();
}
