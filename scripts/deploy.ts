// `npm run deploy`: `wrangler deploy` with the commit the checkout is at written into the bundle
// (server/info.ts COMMIT: the information document's `commit` and /metrics' build_info), as
// `npm run build` and `npm start` write it. Arguments after `--` go to wrangler.
// Runs under plain Node 22 (type stripping): erasable TypeScript only.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { ROOT, commitDefine } from "./build.ts";

const r = spawnSync(
  process.execPath,
  [join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js"), "deploy", ...commitDefine(), ...process.argv.slice(2)],
  {
    cwd: ROOT,
    stdio: "inherit",
  },
);
process.exit(r.status ?? 1);
