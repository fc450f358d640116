// `npm test`'s end-to-end layer in two lanes at once (vitest.e2e.config.ts, E2E_LANE): the files
// that start relays of their own (restarts, kills, the launcher) beside the files that share one
// relay. Much of either lane's time is waiting on a relay (starting, draining, evicting idle
// objects, a client's back-off), so together they take far less than one after the other. Each
// lane still runs its files one at a time. The Worker bundle is built once, here, for both.
// Each line of a lane's output is prefixed with its lane; the exit code is non-zero if either fails.
// Arguments go to both vitest runs (file filters, -t; with filters, add --passWithNoTests).
import { spawn } from "node:child_process";
import { join } from "node:path";
import { buildWorker, ROOT } from "./build.ts";

const LANES = ["shared", "own"] as const;

function runLane(lane: (typeof LANES)[number]): Promise<number> {
  const child = spawn(
    process.execPath,
    [join(ROOT, "node_modules/vitest/vitest.mjs"), "run", "--config", "vitest.e2e.config.ts", ...process.argv.slice(2)],
    {
      cwd: ROOT,
      env: { ...process.env, E2E_LANE: lane, RELAY_BUNDLE_BUILT: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  for (const [from, to] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ] as const) {
    let rest = "";
    from.setEncoding("utf8");
    from.on("data", (chunk: string) => {
      const lines = (rest + chunk).split("\n");
      rest = lines.pop()!;
      for (const line of lines) to.write(`[${lane}] ${line}\n`);
    });
    from.on("end", () => rest && to.write(`[${lane}] ${rest}\n`));
  }
  return new Promise((resolve) => child.on("close", (code) => resolve(code ?? 1)));
}

buildWorker();
const codes = await Promise.all(LANES.map(runLane));
for (const [i, lane] of LANES.entries()) console.log(`end-to-end lane ${lane}: ${codes[i] === 0 ? "passed" : `failed (exit ${codes[i]})`}`);
process.exit(codes.every((c) => c === 0) ? 0 : 1);
