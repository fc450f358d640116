// Starting the two baselines of `npm run bench` on free loopback ports, as processes of their own
// (so their CPU is counted apart from the load generator's, as the relay's is):
// (a) bare-do.ts under `workerd serve` (the workerd binary wrangler ships, the relay's
//     compatibility date), bundled with esbuild and given a generated workerd config;
// (b) node-ws-relay.ts under the same Node that runs the bench.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../test/helpers/relay-process";
import { REQUIRED_FLAGS, capnpString as q } from "../../scripts/workerd-config";

const ROOT = new URL("../../", import.meta.url).pathname;

/** What the bench needs of any server it measures: where it is, its pid (for CPU and memory), stop. */
export interface Server {
  url: string;
  pid: number;
  stop(): Promise<unknown>;
}

/** The workerd of the wrangler this project builds with, as scripts/serve.ts resolves it. */
export function workerdBinary(): string {
  const fromWrangler = createRequire(createRequire(join(ROOT, "package.json")).resolve("wrangler/package.json"));
  return (fromWrangler("workerd") as { default: string }).default;
}

async function launch(cmd: string, args: string[], cwd: string, port: number): Promise<Server> {
  let out = "";
  const child: ChildProcess = spawn(cmd, args, {
    cwd,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  child.stdout?.on("data", (d) => (out += d));
  child.stderr?.on("data", (d) => (out += d));
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.on("exit", () => {
      exited = true;
      resolve();
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited) throw new Error(`${cmd} exited before it was ready:\n${out}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      process.kill(-child.pid!, "SIGKILL");
      throw new Error(`${cmd} did not become ready in 30 s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    pid: child.pid!,
    async stop() {
      if (exited) return;
      process.kill(-child.pid!, "SIGTERM");
      const timer = setTimeout(() => !exited && process.kill(-child.pid!, "SIGKILL"), 5_000);
      await exit;
      clearTimeout(timer);
    },
  };
}

/** Baseline (a): the bare Durable Objects under workerd, with SQLite in a fresh folder. */
export async function startBareDo(opts: { workerd?: string; dir?: string } = {}): Promise<Server> {
  // With `dir`, the objects' SQLite stays there across a stop and the next start (the caller removes it).
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "bench-bare-do-"));
  const built = spawnSync(
    join(ROOT, "node_modules/.bin/esbuild"),
    [
      join(ROOT, "bench/baselines/bare-do.ts"),
      "--bundle",
      "--format=esm",
      "--external:cloudflare:workers",
      `--outfile=${join(dir, "worker.js")}`,
      "--log-level=warning",
    ],
    { encoding: "utf8" },
  );
  if (built.status !== 0) throw new Error(`esbuild failed: ${built.stderr}`);
  const port = await freePort();
  const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
  const compat = /compatibility_date\s*=\s*"([^"]+)"/.exec(toml)![1];
  // The relay's compatibility flags (no_web_socket_compression among them): the same runtime settings, so the figures compare.
  const flags = [...new Set([...JSON.parse(/compatibility_flags\s*=\s*(\[[^\]]*\])/.exec(toml)![1]), ...REQUIRED_FLAGS])] as string[];
  const config = `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "data", disk = (path = ${q(join(dir, "data"))}, writable = true)),
  ],
  sockets = [ (name = "http", address = ${q(`127.0.0.1:${port}`)}, http = (), service = "main") ],
);
const worker :Workerd.Worker = (
  modules = [ (name = "worker.js", esModule = embed "worker.js") ],
  compatibilityDate = ${q(compat)},
  compatibilityFlags = [${flags.map(q).join(", ")}],
  bindings = [
    (name = "USER", durableObjectNamespace = (className = "BareUser")),
    (name = "ROOM", durableObjectNamespace = (className = "BareRoom")),
    (name = "MAILBOX", durableObjectNamespace = (className = "BareMailbox")),
    (name = "SPACE", durableObjectNamespace = (className = "BareSpace")),
  ],
  durableObjectNamespaces = [
    (className = "BareUser", uniqueKey = "bench-BareUser", enableSql = true),
    (className = "BareRoom", uniqueKey = "bench-BareRoom", enableSql = true),
    (className = "BareMailbox", uniqueKey = "bench-BareMailbox", enableSql = true),
    (className = "BareSpace", uniqueKey = "bench-BareSpace", enableSql = true),
  ],
  durableObjectStorage = (localDisk = "data"),
);
`;
  mkdirSync(join(dir, "data"), { recursive: true });
  writeFileSync(join(dir, "config.capnp"), config);
  const server = await launch(opts.workerd ?? workerdBinary(), ["serve", join(dir, "config.capnp")], dir, port);
  return {
    ...server,
    async stop() {
      await server.stop();
      if (!opts.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Baseline (b): the Node relay on `ws`. */
export async function startNodeRelay(): Promise<Server> {
  const port = await freePort();
  return launch(process.execPath, [join(ROOT, "bench/baselines/node-ws-relay.ts"), String(port)], ROOT, port);
}
