// Builds the Worker's static assets (wrangler.toml [assets]): the Tally demo (/demo/) and the Minca home (/connect/), their
// scripts bundled for browsers from the project's own modules, and their static files.
// Run by `npm run build:web`, which wrangler runs before `wrangler dev` and `wrangler deploy`
// (wrangler.toml [build]) and `npm start` and `npm test` run first; the output (dist/web) is not
// committed. Built into a fresh folder that then replaces dist/web, so a relay serving the old
// one (or a second build at the same time) never sees it half-written.
import { build } from "esbuild";
import { cpSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const final = `${root}dist/web`;
const out = `${final}.${process.pid}.tmp`;

rmSync(out, { recursive: true, force: true });
mkdirSync(`${out}/demo`, { recursive: true });
mkdirSync(`${out}/connect`, { recursive: true });
for (const f of ["index.html", "demo.css"]) cpSync(`${root}web/demo/${f}`, `${out}/demo/${f}`);
cpSync(`${root}web/connect/index.html`, `${out}/connect/index.html`);
await build({
  // The Tally demo (/demo/) and the Minca home (/connect/).
  entryPoints: { "demo/demo": `${root}web/demo/demo.ts`, "connect/connect": `${root}web/connect/connect.ts` },
  outdir: out,
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["chrome110", "firefox115", "safari16"],
  minify: true,
  sourcemap: "linked",
  logLevel: "warning",
});

const old = `${final}.${process.pid}.old`;
try {
  renameSync(final, old);
} catch {
  // no earlier build
}
renameSync(out, final);
rmSync(old, { recursive: true, force: true });
