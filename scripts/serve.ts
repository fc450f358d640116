// `npm start`: the relay in production on one machine. Checks its settings and that the port is
// free (scripts/preflight.ts), builds the pages and the Worker bundle (not with --no-build: then
// it writes nothing in the checkout), generates the workerd configuration from wrangler.toml (scripts/workerd-config.ts), runs `workerd serve` on
// it, and shuts it down cleanly on SIGTERM or SIGINT:
//
//   1. POST /drain on the loopback admin socket: new WebSocket upgrades are refused (503) and every
//      client socket is closed with 1001, so clients reconnect at once;
//   2. SIGTERM to workerd: it stops listening and exits once its last connection has ended;
//   3. after the grace period, SIGKILL (every write a client was told of is already on disk).
//
// Settings: flags, else environment, else the default. `npm start -- --help` lists them. Every
// line it writes is one JSON object (scripts/launcher-log.ts).
// Runs under plain Node 22 (type stripping): erasable TypeScript only.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { BUNDLE_DIR, ROOT, buildWorker } from "./build.ts";
import { clientAddressWarnings } from "./client-address-warnings.ts";
import { type DataLock, acquireDataLock, describeHolder } from "./data-lock.ts";
import { pipeLines, say } from "./launcher-log.ts";
import { devicesAllowed, runtimeOpenFiles, withOpenFilesRaised } from "./open-files.ts";
import { EXIT_BAD_SETTING, StartError, badSettingMessage, checkPortFree, checkRuntimeDirFree, getHealthz } from "./preflight.ts";
import { type SweepOptions, sweepEmptyDatabases } from "./sweep.ts";
import { ConfigError, OPTIONAL_SECRETS, listBundle, plan, publicWarnings, workerdConfig, type WranglerConfig } from "./workerd-config.ts";

const HELP = `Usage: npm start -- [options]

Runs the relay on workerd, with its Durable Objects' SQLite files in a local folder. npm runs the
launcher with the project's own Node 22 (the \`node\` devDependency); a service manager runs it
as node_modules/.bin/node scripts/serve.ts [options].

  --host ADDR          listen address          RELAY_HOST            default 127.0.0.1
  --port N             listen port             RELAY_PORT            default 8787
  --data DIR           data directory          RELAY_DATA_DIR        default ./data
  --outbound LIST      where the relay may connect out (Web Push): workerd network classes
                       or CIDRs, comma-separated
                                               RELAY_OUTBOUND_ALLOW  default public
  --grace SECONDS      shutdown grace period   RELAY_SHUTDOWN_GRACE  default 30
  --sweep SECONDS      how often the empty databases of objects that are not live are removed
                       (also at every start; 0: at start only)
                                               RELAY_SWEEP_INTERVAL  default 600
  --runtime-dir DIR    generated config, admin socket, pid file
                                               RELAY_RUNTIME_DIR     default dist/run/<port>
  --workerd PATH       the workerd binary      WORKERD               default: the one wrangler ships
  --no-build           start the build in dist/ (npm run build) as it is: writes nothing in the
                       checkout, so a user that cannot write it can run the relay
  --print-config       print the generated workerd config and exit (npm run config)
  --help

Every [vars] entry of wrangler.toml can be overridden by an environment variable of the same name;
the secrets ${OPTIONAL_SECRETS.join(", ")},
and any listed under [secrets] required, are read from the environment by workerd at start.
Every setting is checked at start: a wrong one stops the start with a message naming it (exit 2);
a busy port, or a relay already running on the data or the runtime directory, stops it too
(exit 1). SIGHUP is logged and ignored: settings are read at start, so restart to apply them.`;

interface Settings {
  host: string;
  port: number;
  dataDir: string;
  outbound: string[];
  graceSeconds: number;
  sweepSeconds: number;
  runtimeDir: string;
  workerd: string;
  build: boolean;
  printConfig: boolean;
}

/** A whole number in [min, max] written in decimal digits, or a ConfigError naming the flag and the setting. */
function intSetting(raw: string, min: number, max: number, what: string): number {
  const n = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new ConfigError(`${what}: "${raw}" is not a whole number from ${min} to ${max}`);
  return n;
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
      sweep: { type: "string" },
      "runtime-dir": { type: "string" },
      workerd: { type: "string" },
      "no-build": { type: "boolean" },
      "print-config": { type: "boolean" },
      help: { type: "boolean" },
    },
    strict: true,
  });
  if (values.help) return null;
  const port = intSetting(values.port ?? env.RELAY_PORT ?? "8787", 1, 65535, "the listen port (--port, RELAY_PORT)");
  const graceRaw = values.grace ?? env.RELAY_SHUTDOWN_GRACE ?? "30";
  const graceSeconds = /^\d+(\.\d+)?$/.test(graceRaw.trim()) ? Number(graceRaw) : NaN;
  if (!(graceSeconds >= 0 && graceSeconds <= 86_400)) {
    throw new ConfigError(
      `the shutdown grace period (--grace, RELAY_SHUTDOWN_GRACE): "${graceRaw}" is not a number of seconds from 0 to 86400`,
    );
  }
  const sweepSeconds = intSetting(
    values.sweep ?? env.RELAY_SWEEP_INTERVAL ?? "600",
    0,
    86_400,
    "the sweep interval (--sweep, RELAY_SWEEP_INTERVAL)",
  );
  const host = (values.host ?? env.RELAY_HOST ?? "127.0.0.1").trim();
  if (host === "" || /[\s/]/.test(host)) throw new ConfigError(`the listen address (--host, RELAY_HOST): "${host}" is not an address`);
  const outbound = (values.outbound ?? env.RELAY_OUTBOUND_ALLOW ?? "public")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (outbound.length === 0)
    throw new ConfigError(
      "where the relay may connect out (--outbound, RELAY_OUTBOUND_ALLOW) is empty: name at least one network class (public) or CIDR",
    );
  for (const o of outbound) {
    if (!/^(public|private|local|network|unix|unix-abstract)$/.test(o) && !/^[0-9a-fA-F.:]+\/\d{1,3}$/.test(o)) {
      throw new ConfigError(
        `where the relay may connect out (--outbound, RELAY_OUTBOUND_ALLOW): "${o}" is neither a workerd network class (public, private, local, network) nor a CIDR`,
      );
    }
  }
  const dataDir = values.data ?? env.RELAY_DATA_DIR ?? "data";
  if (dataDir.trim() === "") throw new ConfigError("the data directory (--data, RELAY_DATA_DIR) is empty");
  return {
    host,
    port,
    dataDir: resolve(dataDir),
    outbound,
    graceSeconds,
    sweepSeconds,
    runtimeDir: resolve(values["runtime-dir"] || env.RELAY_RUNTIME_DIR || join(ROOT, "dist", "run", String(port))),
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

/** One request to the admin socket (a unix socket); resolves with the JSON body, of the shape the caller names. */
function admin<T>(socketPath: string, method: string, path: string, timeoutMs: number): Promise<T> {
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

/** Builds the pages (dist/web) and the Worker bundle (dist/worker), as `npm run build` does. */
function buildAll(): void {
  const web = spawnSync(process.execPath, [join(ROOT, "web", "build.mjs")], { cwd: ROOT, encoding: "utf8" });
  if (web.status !== 0) throw new StartError(`the pages could not be built (exit ${web.status}):\n${web.stdout}${web.stderr}`, 1);
  buildWorker();
}

/** The prebuilt output `--no-build` starts, or a StartError saying how to make it. */
function checkBuilt(): void {
  for (const [path, what] of [
    [join(BUNDLE_DIR, "index.js"), "the Worker bundle"],
    [join(ROOT, "dist", "web"), "the pages"],
  ] as const) {
    if (!existsSync(path)) {
      throw new StartError(
        `--no-build: ${what} (${path}) is missing: run \`npm run build\` first, as a user that can write the checkout`,
        EXIT_BAD_SETTING,
      );
    }
  }
}

/** One sweep of empty object databases (scripts/sweep.ts), logged when it removed any. */
function sweep(dataDir: string, opts: SweepOptions): void {
  try {
    const r = sweepEmptyDatabases(dataDir, opts);
    if (r.removed > 0)
      say.info(`removed the empty databases of ${r.removed} object(s) that are not live`, { removed: r.removed, kept: r.kept });
  } catch (err) {
    say.warn(`the sweep of empty databases failed: ${(err as Error).message}`);
  }
}

/**
 * A shell that kills `pid` (workerd) when its standard input, a pipe from this process, closes:
 * when the launcher exits, however it exits. It checks first that the pid is still a workerd.
 */
function watchOverRuntime(pid: number): ChildProcess {
  const script =
    'read _ignored; if [ -r "/proc/$1/cmdline" ] && ! tr "\\0" " " < "/proc/$1/cmdline" | grep -q workerd; then exit 0; fi; kill -KILL "$1" 2>/dev/null';
  const w = spawn("/bin/sh", ["-c", script, "relay-watch", String(pid)], { stdio: ["pipe", "ignore", "ignore"], detached: true });
  w.on("error", (err) => say.warn(`could not start the watch that stops workerd with the launcher: ${err.message}`));
  w.unref();
  return w;
}

let lock: DataLock | undefined;
let stopRuntime: (() => void) | undefined;
// workerd first, then the lock: a next start never finds the lock free while this runtime lives.
process.on("exit", () => {
  stopRuntime?.();
  lock?.release();
});

async function main(): Promise<number> {
  let s: Settings | null;
  try {
    s = settings(process.argv.slice(2), process.env);
  } catch (err) {
    if (!(err instanceof ConfigError) && !(err as NodeJS.ErrnoException).code?.startsWith("ERR_PARSE_ARGS")) throw err;
    say.error(`bad setting: ${(err as Error).message}`, { help: "npm start -- --help" });
    return EXIT_BAD_SETTING;
  }
  if (!s) {
    console.log(HELP);
    return 0;
  }
  const adminSocket = join(s.runtimeDir, "admin.sock");
  if (adminSocket.length > 100)
    throw new ConfigError(`the admin socket path is too long for a unix socket: ${adminSocket}; pass a shorter --runtime-dir`);
  const listen = listenAddress(s.host, s.port);
  if (!s.printConfig) {
    // Nothing of a relay already running here is touched before these pass.
    await checkPortFree(s.host, s.port);
    checkRuntimeDirFree(s.runtimeDir);
    lock = acquireDataLock(s.dataDir, listen);
    if (lock.tookOverFrom)
      say.warn(`took over the data directory's lock left by a relay that is gone (${describeHolder(lock.tookOverFrom)})`);
  }
  if (s.build) {
    say.info("building the pages and the Worker bundle (wrangler; about half a minute on a first start, `--no-build` skips it)");
    const t0 = Date.now();
    buildAll();
    say.info(`built in ${((Date.now() - t0) / 1000).toFixed(1)} s; starting workerd`);
  } else checkBuilt();
  const cfg = await readWranglerConfig();

  const text = workerdConfig(cfg, {
    listen,
    dataDir: s.dataDir,
    adminAddress: `unix:${adminSocket}`,
    configDir: s.runtimeDir,
    modules: listBundle(BUNDLE_DIR, cfg),
    env: process.env,
    outboundAllow: s.outbound,
    projectDir: ROOT,
  });
  if (s.printConfig) {
    process.stdout.write(text);
    return 0;
  }
  mkdirSync(s.runtimeDir, { recursive: true });
  const configPath = join(s.runtimeDir, "workerd.capnp");
  writeFileSync(`${configPath}.tmp`, text);
  renameSync(`${configPath}.tmp`, configPath);
  // The data directory holds generated keys and every user's stored data: the relay's user only
  // (0700), and workerd makes its files under a umask that keeps them from other users (0600).
  mkdirSync(s.dataDir, { recursive: true, mode: 0o700 });
  chmodSync(s.dataDir, 0o700);
  process.umask(0o077);
  rmSync(adminSocket, { force: true });
  // Nothing runs on the data directory yet: every empty database left by an earlier run goes.
  sweep(s.dataDir, { minAgeMs: 0, runtimeRunning: false });

  const p = plan(cfg, process.env, s.outbound);
  const missing = p.secrets.filter((k) => process.env[k] === undefined);
  if (missing.length) say.warn(`secrets not set in the environment: ${missing.join(", ")}`);
  const publicUrl = p.vars.find((v) => v.name === "PUBLIC_URL")?.value;
  for (const w of publicWarnings(s.host, { PUBLIC_URL: publicUrl, ADMIN_TOKEN: process.env.ADMIN_TOKEN })) say.warn(w);
  const trustedHeader = p.vars.find((v) => v.name === "TRUSTED_PROXY_HEADER")?.value;
  for (const w of clientAddressWarnings(s.host, { PUBLIC_URL: publicUrl, TRUSTED_PROXY_HEADER: trustedHeader })) say.warn(w);

  // Its own process group: a terminal's Ctrl-C reaches this supervisor only, which drains first.
  // Its output passes through the launcher, so every line of `npm start` is one JSON object.
  // Its open-file soft limit raised to the hard one (scripts/open-files.ts): each device holds a descriptor.
  const files = runtimeOpenFiles();
  if (files !== null)
    say.info(
      Number.isFinite(files)
        ? `open files: ${files} (the hard limit): about ${devicesAllowed(files)} idle devices (2 each, 3 more per object live); past it new work is refused (raise it with ulimit -Hn / LimitNOFILE)`
        : "open files: unlimited",
      { open_files: Number.isFinite(files) ? files : null },
    );
  const run = withOpenFilesRaised(s.workerd, ["serve", configPath]);
  const child: ChildProcess = spawn(run.cmd, run.args, {
    cwd: s.runtimeDir,
    env: process.env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  // workerd dies with the launcher, even one killed with SIGKILL (no handler runs then): a tiny
  // shell, in a process group of its own, reads a pipe only this process holds open and kills
  // workerd when the pipe closes, which the kernel does when this process ends, however it ends.
  const watcher = child.pid === undefined ? undefined : watchOverRuntime(child.pid);
  if (child.pid !== undefined) lock?.setWorkerd(child.pid);
  const piped = Promise.all([
    child.stdout ? pipeLines(child.stdout, process.stdout, "info", "workerd") : undefined,
    child.stderr ? pipeLines(child.stderr, process.stderr, "warn", "workerd") : undefined,
  ]);
  const pidFile = join(s.runtimeDir, "workerd.pid");
  writeFileSync(pidFile, `${child.pid}\n`);
  if (s.sweepSeconds > 0) {
    const timer = setInterval(() => sweep(s!.dataDir, { minAgeMs: s!.sweepSeconds * 1000, runtimeRunning: true }), s.sweepSeconds * 1000);
    timer.unref();
  }
  const killChild = () => {
    try {
      child.kill("SIGKILL");
    } catch {
      // gone
    }
  };
  stopRuntime = killChild;

  let stopping: Promise<void> | undefined;
  let exitCode: number | null = null;
  const exited = new Promise<number>((resolveExit) =>
    child.on("exit", (code, signal) => {
      exitCode = code ?? (signal ? 128 : 1);
      watcher?.kill("SIGKILL"); // its pid to kill is no longer workerd's
      rmSync(pidFile, { force: true });
      resolveExit(exitCode);
    }),
  );
  child.on("error", (err) => say.error(`could not run workerd (${s!.workerd}): ${err.message}`));

  const shutdown = (signal: string) => {
    if (stopping) {
      if (signal === "SIGINT") {
        say.warn("second interrupt: stopping now");
        killChild();
      }
      return;
    }
    stopping = (async () => {
      say.info(`${signal}: draining`);
      try {
        const r = await admin<{ sockets: number; objects: number }>(adminSocket, "POST", "/drain", 5_000);
        say.info(`closed ${r.sockets} client socket(s) of ${r.objects} object(s)`, { sockets: r.sockets, objects: r.objects });
      } catch (err) {
        say.warn(`drain failed (${(err as Error).message}); stopping anyway`);
      }
      child.kill("SIGTERM");
      const timer = setTimeout(() => {
        say.warn(`still running after ${s!.graceSeconds} s: killing workerd`);
        killChild();
      }, s!.graceSeconds * 1000);
      await exited;
      clearTimeout(timer);
    })();
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
  // SIGHUP never stops the relay: a terminal closing, or `kill -HUP` sent to reload, would
  // otherwise leave it down (a unit's Restart=on-failure does not restart a clean exit). Every
  // setting is read once, at start: nothing can be reloaded without a restart.
  process.on("SIGHUP", () =>
    say.info("SIGHUP: ignored (settings are read at start; restart the relay to apply a change: systemctl restart, or SIGTERM and start)"),
  );
  // A parent that goes away without passing the signal on (a shell between npm and this process,
  // say) leaves us adopted by init: stop as if told to.
  const parent = process.ppid;
  const watchParent = setInterval(() => {
    if (process.ppid !== parent) shutdown("parent exited");
  }, 1_000);
  watchParent.unref();

  // Ready once the admin socket answers (workerd binds every socket before serving); then one
  // GET /healthz: the Worker answers 500 bad_setting while a setting is wrong.
  const started = Date.now();
  let badSetting: string | null = null;
  for (;;) {
    if (exitCode !== null) break;
    try {
      await admin<unknown>(adminSocket, "GET", "/status", 1_000);
    } catch {
      if (Date.now() - started > 30_000) {
        say.error("workerd did not become ready in 30 s");
        killChild();
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
      continue;
    }
    try {
      badSetting = badSettingMessage(await getHealthz(s.host, s.port));
    } catch (err) {
      say.warn(`GET /healthz on the relay failed: ${(err as Error).message}`);
    }
    if (badSetting === null)
      say.info(`listening on http://${listen} (workerd, pid ${child.pid}); data in ${s.dataDir}`, {
        listen,
        pid: child.pid,
        data: s.dataDir,
      });
    break;
  }
  if (badSetting !== null && !stopping) {
    say.error(`bad setting: ${badSetting}`, { help: "npm start -- --help; the settings are listed in the README" });
    child.kill("SIGTERM");
    const timer = setTimeout(killChild, 5_000);
    await exited;
    clearTimeout(timer);
    await piped;
    return EXIT_BAD_SETTING;
  }

  const code = await exited;
  await piped;
  if (stopping) {
    await stopping;
    say.info("stopped");
    return 0;
  }
  say.error(`workerd exited on its own (code ${code})`, { code });
  return code === 0 ? 1 : code;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof StartError) say.error(err.message);
    else if (err instanceof ConfigError) say.error(`bad setting: ${err.message}`);
    else say.error(`the launcher failed: ${(err as Error)?.message ?? String(err)}`, { stack: (err as Error)?.stack });
    process.exit(err instanceof StartError ? err.exitCode : err instanceof ConfigError ? EXIT_BAD_SETTING : 1);
  },
);
