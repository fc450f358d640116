// Builds the Worker's static assets (wrangler.toml [assets], served at /demo/): the demo page's
// script bundled for browsers from the project's own client modules, and its static files.
// Run by `npm run build:web`, which `npm run dev` and `npm test` run first; the output
// (dist/web) is not committed.
import { build } from "esbuild";
import { cpSync, mkdirSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const out = `${root}dist/web`;

rmSync(out, { recursive: true, force: true });
mkdirSync(`${out}/demo`, { recursive: true });
for (const f of ["index.html", "demo.css"]) cpSync(`${root}web/demo/${f}`, `${out}/demo/${f}`);
await build({
  entryPoints: [`${root}web/demo/demo.ts`],
  outfile: `${out}/demo/demo.js`,
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["chrome110", "firefox115", "safari16"],
  minify: true,
  sourcemap: "linked",
  logLevel: "warning",
});
