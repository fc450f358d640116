// `npm start`: the relay in production on one machine. Builds the Worker bundle, generates the
// workerd configuration from wrangler.toml (scripts/workerd-config.ts), runs `workerd serve` on
// it, and shuts it down cleanly on SIGTERM or SIGINT:
//
//   1. POST /drain on the loopback admin socket: new WebSocket upgrades are refused (503) and every
//      client socket is closed with 1001, so clients reconnect at once;
//   2. SIGTERM to workerd: it stops listening and exits once its last connection has ended;
//   3. after the grace period, SIGKILL (every write a client was told of is already on disk).
//
// Settings: flags, else environment, else the default. `node scripts/serve.ts --help` lists them.
// Runs under plain Node 22 (type stripping): erasable TypeScript only.
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { BUNDLE_DIR, ROOT, buildWorker } from "./build.ts";
import { ConfigError, listBundle, plan, publicWarnings, workerdConfig, type WranglerConfig } from "./workerd-config.ts";

const HELP = `Usage: npm start -- [options]     (or: node scripts/serve.ts [options])

Runs the relay on workerd, with its Durable Objects' SQLite files in a local folder.

  --host ADDR          listen address          RELAY_HOST            default 127.0.0.1
  --port N             listen port             RELAY_PORT            default 8787
  --data DIR           data directory          RELAY_DATA_DIR        default ./data
  --outbound LIST      where the relay may connect out (Web Push): workerd network classes
                       or CIDRs, comma-separated
                                               RELAY_OUTBOUND_ALLOW  default public
  --grace SECONDS      shutdown grace period   RELAY_SHUTDOWN_GRACE  default 30
  --runtime-dir DIR    generated config, admin socket, pid file
                                               RELAY_RUNTIME_DIR     default dist/run/<port>
  --workerd PATH       the workerd binary      WORKERD               default: the one wrangler ships
  --no-build           use the bundle in dist/worker as it is
  --print-config       print the generated workerd config and exit
  --help

Every [vars] entry of wrangler.toml can be overridden by an environment variable of the same name;
the secrets ADMIN_TOKEN, VAPID_PRIVATE_KEY, VAPID_SUBJECT, MINCA_HOST_KEY (and MINCA_HOST_NAME),
MINCA_HOST_ADMISSION_TOKEN, and
any listed under [secrets] required, are read from the environment by workerd at start.`;

interface Settings {
  host: string;
  port: number;
  dataDir: string;
  outbound: string[];
  graceSeconds: number;
  runtimeDir: string;
  workerd: string;
  build: boolean;
  printConfig: boolean;
}

function settings(argv: string[], env: NodeJS.ProcessEnv): Settings | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: "string" },
      port: { type: "string" },
      data: { type: "string" },
      outbound: { type: "string" },
      grace: { type: "string" },
      "runtime-dir": { type: "string" },
      workerd: { type: "string" },
      "no-build": { type: "boolean" },
      "print-config": { type: "boolean" },
      help: { type: "boolean" },
    },
    strict: true,
  });
  if (values.help) return null;
  const port = Number(values.port ?? env.RELAY_PORT ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`bad port: ${values.port ?? env.RELAY_PORT}`);
  const graceSeconds = Number(values.grace ?? env.RELAY_SHUTDOWN_GRACE ?? 30);
  if (!(graceSeconds >= 0)) throw new ConfigError(`bad grace period: ${values.grace ?? env.RELAY_SHUTDOWN_GRACE}`);
  return {
    host: values.host ?? env.RELAY_HOST ?? "127.0.0.1",
    port,
    dataDir: resolve(values.data ?? env.RELAY_DATA_DIR ?? "data"),
    outbound: (values.outbound ?? env.RELAY_OUTBOUND_ALLOW ?? "public").split(",").map((s) => s.trim()).filter(Boolean),
    graceSeconds,
    runtimeDir: resolve(values["runtime-dir"] ?? env.RELAY_RUNTIME_DIR ?? join(ROOT, "dist", "run", String(port))),
    workerd: values.workerd ?? env.WORKERD ?? bundledWorkerd(),
    build: !values["no-build"],
    printConfig: values["print-config"] === true,
  };
}

/** The workerd binary of the wrangler this project builds with, so `wrangler dev` and
 * `workerd serve` run the same runtime. */
export function bundledWorkerd(): string {
  const fromWrangler = createRequire(createRequire(join(ROOT, "package.json")).resolve("wrangler/package.json"));
  return (fromWrangler("workerd") as { default: string }).default;
}

export async function readWranglerConfig(): Promise<WranglerConfig> {
  const { unstable_readConfig } = await import("wrangler");
  return unstable_readConfig({ config: join(ROOT, "wrangler.toml") }) as unknown as WranglerConfig;
}

function listenAddress(host: string, port: number): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]:${port}` : `${host}:${port}`;
}

/** One request to the admin socket (a unix socket); resolves with the JSON body. */
function admin(socketPath: string, method: string, path: string, timeoutMs: number): Promise<any> {
  return new Promise((resolvePromise, reject) => {
    const req = request({ socketPath, method, path, timeout: timeoutMs }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (body += d));
      res.on("end", () => {
        try {
          resolvePromise(JSON.parse(body));
        } catch {
          reject(new Error(`admin ${path}: ${res.statusCode} ${body.slice(0, 200)}`));
        }
      });
    });
    req.on("timeout", () => req.destroy(new Error(`admin ${path}: timed out`)));
    req.on("error", reject);
    req.end();
  });
}

const log = (msg: string) => console.log(`[relay] ${msg}`);

async function main(): Promise<number> {
  let s: Settings | null;
  try {
    s = settings(process.argv.slice(2), process.env);
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (!s) {
    console.log(HELP);
    return 0;
  }
  if (s.build || !existsSync(join(BUNDLE_DIR, "index.js"))) buildWorker();
  const cfg = await readWranglerConfig();

  mkdirSync(s.runtimeDir, { recursive: true });
  const adminSocket = join(s.runtimeDir, "admin.sock");
  if (adminSocket.length > 100) throw new ConfigError(`the admin socket path is too long for a unix socket: ${adminSocket}; pass a shorter --runtime-dir`);
  const listen = listenAddress(s.host, s.port);
  const text = workerdConfig(cfg, {
    listen,
    dataDir: s.dataDir,
    adminAddress: `unix:${adminSocket}`,
    configDir: s.runtimeDir,
    modules: listBundle(BUNDLE_DIR, cfg),
    env: process.env,
    outboundAllow: s.outbound,
  });
  if (s.printConfig) {
    process.stdout.write(text);
    return 0;
  }
  const configPath = join(s.runtimeDir, "workerd.capnp");
  writeFileSync(`${configPath}.tmp`, text);
  renameSync(`${configPath}.tmp`, configPath);
  // The data directory holds generated keys and every user's stored data: the relay's user only
  // (0700), and workerd makes its files under a umask that keeps them from other users (0600).
  mkdirSync(s.dataDir, { recursive: true, mode: 0o700 });
  chmodSync(s.dataDir, 0o700);
  process.umask(0o077);
  rmSync(adminSocket, { force: true });

  const p = plan(cfg, process.env, s.outbound);
  const missing = p.secrets.filter((k) => process.env[k] === undefined);
  if (missing.length) log(`warning: secrets not set in the environment: ${missing.join(", ")}`);
  const publicUrl = p.vars.find((v) => v.name === "PUBLIC_URL")?.value;
  for (const w of publicWarnings(s.host, { PUBLIC_URL: publicUrl, ADMIN_TOKEN: process.env.ADMIN_TOKEN })) {
    console.warn(`[relay] WARNING: ${w}`);
  }

  // Its own process group: a terminal's Ctrl-C reaches this supervisor only, which drains first.
  const child: ChildProcess = spawn(s.workerd, ["serve", configPath], {
    cwd: s.runtimeDir,
    env: process.env,
    stdio: ["ignore", "inherit", "inherit"],
    detached: true,
  });
  const pidFile = join(s.runtimeDir, "workerd.pid");
  writeFileSync(pidFile, `${child.pid}\n`);
  const killChild = () => {
    try {
      child.kill("SIGKILL");
    } catch {
      // gone
    }
  };
  process.on("exit", killChild);

  let stopping: Promise<void> | undefined;
  let exitCode: number | null = null;
  const exited = new Promise<number>((resolveExit) =>
    child.on("exit", (code, signal) => {
      exitCode = code ?? (signal ? 128 : 1);
      rmSync(pidFile, { force: true });
      resolveExit(exitCode);
    }),
  );
  child.on("error", (err) => {
    console.error(`[relay] could not run workerd (${s!.workerd}): ${err.message}`);
  });

  const shutdown = (signal: string) => {
    if (stopping) {
      if (signal === "SIGINT") {
        log("second interrupt: stopping now");
        killChild();
      }
      return;
    }
    stopping = (async () => {
      log(`${signal}: draining`);
      try {
        const r = await admin(adminSocket, "POST", "/drain", 5_000);
        log(`closed ${r.sockets} client socket(s) of ${r.objects} object(s)`);
      } catch (err) {
        log(`drain failed (${(err as Error).message}); stopping anyway`);
      }
      child.kill("SIGTERM");
      const timer = setTimeout(() => {
        log(`still running after ${s!.graceSeconds} s: killing workerd`);
        killChild();
      }, s!.graceSeconds * 1000);
      await exited;
      clearTimeout(timer);
    })();
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGHUP", () => shutdown("SIGHUP"));
  // A parent that goes away without passing the signal on (a shell between npm and this process,
  // say) leaves us adopted by init: stop as if told to.
  const parent = process.ppid;
  const watchParent = setInterval(() => {
    if (process.ppid !== parent) shutdown("parent exited");
  }, 1_000);
  watchParent.unref();

  // Ready once the admin socket answers (workerd binds every socket before serving).
  const started = Date.now();
  for (;;) {
    if (exitCode !== null) break;
    try {
      await admin(adminSocket, "GET", "/status", 1_000);
      log(`listening on http://${listen} (workerd, pid ${child.pid}); data in ${s.dataDir}`);
      break;
    } catch {
      if (Date.now() - started > 30_000) {
        log("workerd did not become ready in 30 s");
        killChild();
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  const code = await exited;
  if (stopping) {
    await stopping;
    log("stopped");
    return 0;
  }
  log(`workerd exited on its own (code ${code})`);
  return code === 0 ? 1 : code;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof ConfigError ? `[relay] ${err.message}` : err);
    process.exit(1);
  },
);
