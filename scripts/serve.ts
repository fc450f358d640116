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
// A workerd that dies on its own after it served is started again, within a bound
// (scripts/runtime-process.ts); past the bound the launcher exits non-zero.
//
// Settings: flags, else environment, else the default. `npm start -- --help` lists them. Every
// line it writes is one JSON object (scripts/launcher-log.ts).
// Runs under plain Node 22 (type stripping): erasable TypeScript only.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { BUNDLE_DIR, ROOT, buildWorker } from "./build.ts";
import { clientAddressWarnings } from "./client-address-warnings.ts";
import { type DataLock, acquireDataLock, describeHolder } from "./data-lock.ts";
import { HELP, type Settings, listenAddress, settings } from "./launcher-settings.ts";
import { say } from "./launcher-log.ts";
import { type OpenFilesWatch, devicesAllowed, filesMargin, runtimeOpenFiles, watchOpenFiles } from "./open-files.ts";
import { EXIT_BAD_SETTING, StartError, badSettingMessage, checkPortFree, checkRuntimeDirFree, getHealthz } from "./preflight.ts";
import { type SweepOptions, sweepEmptyDatabases } from "./sweep.ts";
import { RestartBudget, startRuntime } from "./runtime-process.ts";
import { ConfigError, listBundle, plan, publicWarnings, workerdConfig, type WranglerConfig } from "./workerd-config.ts";

export async function readWranglerConfig(): Promise<WranglerConfig> {
  const { unstable_readConfig } = await import("wrangler");
  return unstable_readConfig({ config: join(ROOT, "wrangler.toml") }) as unknown as WranglerConfig;
}

/** One request to the admin socket (a unix socket); resolves with the JSON body, of the shape the caller names. */
function admin<T>(socketPath: string, method: string, path: string, timeoutMs: number, body?: unknown): Promise<T> {
  return new Promise((resolvePromise, reject) => {
    const headers = body === undefined ? undefined : { "content-type": "application/json" };
    const req = request({ socketPath, method, path, timeout: timeoutMs, headers }, (res) => {
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
    req.end(body === undefined ? undefined : JSON.stringify(body));
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

  const files = runtimeOpenFiles();
  if (files !== null)
    say.info(
      Number.isFinite(files)
        ? `open files: ${files} (the hard limit): about ${devicesAllowed(files)} idle devices (2 each, 3 more per object live); new connections are refused (503) from ${files - filesMargin(files)} open files on (raise the limit with ulimit -Hn / LimitNOFILE)`
        : "open files: unlimited",
      { open_files: Number.isFinite(files) ? files : null },
    );
  if (s.sweepSeconds > 0) {
    const timer = setInterval(() => sweep(s!.dataDir, { minAgeMs: s!.sweepSeconds * 1000, runtimeRunning: true }), s.sweepSeconds * 1000);
    timer.unref();
  }

  // The runtime now running (scripts/runtime-process.ts); it is replaced when it dies on its own.
  let rt = startRuntime(s.workerd, configPath, s.runtimeDir);
  if (rt.child.pid !== undefined) lock?.setWorkerd(rt.child.pid);
  stopRuntime = () => rt.kill();

  let stopping: Promise<void> | undefined;
  const shutdown = (signal: string) => {
    if (stopping) {
      if (signal === "SIGINT") {
        say.warn("second interrupt: stopping now");
        rt.kill();
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
      rt.child.kill("SIGTERM");
      const timer = setTimeout(() => {
        say.warn(`still running after ${s!.graceSeconds} s: killing workerd`);
        rt.kill();
      }, s!.graceSeconds * 1000);
      await rt.exited;
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
  // GET /healthz: the Worker answers 500 bad_setting while a setting is wrong. Null: it never
  // became ready (it exited, or did not answer in 30 s and was killed).
  const ready = async (): Promise<{ badSetting: string | null } | null> => {
    const started = Date.now();
    for (;;) {
      if (rt.exitCode() !== null) return null;
      try {
        await admin<unknown>(adminSocket, "GET", "/status", 1_000);
      } catch {
        if (Date.now() - started > 30_000) {
          say.error("workerd did not become ready in 30 s");
          rt.kill();
          return null;
        }
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      try {
        return { badSetting: badSettingMessage(await getHealthz(s!.host, s!.port)) };
      } catch (err) {
        say.warn(`GET /healthz on the relay failed: ${(err as Error).message}`);
        return { badSetting: null };
      }
    }
  };

  const budget = new RestartBudget(s.restartsPerMinute);
  let watch: OpenFilesWatch | undefined;
  for (let run = 0; ; run++) {
    const r = await ready();
    if (r?.badSetting != null && !stopping) {
      say.error(`bad setting: ${r.badSetting}`, { help: "npm start -- --help; the settings are listed in the README" });
      rt.child.kill("SIGTERM");
      const timer = setTimeout(() => rt.kill(), 5_000);
      await rt.exited;
      clearTimeout(timer);
      await rt.piped;
      return EXIT_BAD_SETTING;
    }
    // Near the open-file limit, new upgrades are refused (scripts/open-files.ts), so devices
    // connecting never bring the runtime to the limit; counted from the first time it serves.
    if (r !== null && watch === undefined && files !== null && Number.isFinite(files) && process.platform === "linux")
      watch = watchOpenFiles({
        pid: () => rt.child.pid,
        limit: files,
        tell: async (crowded, open) => {
          await admin<unknown>(adminSocket, "POST", "/crowded", 1_000, { crowded, open_files: open, limit: files });
        },
      });
    if (r !== null)
      say.info(`listening on http://${listen} (workerd, pid ${rt.child.pid}); data in ${s.dataDir}`, {
        listen,
        pid: rt.child.pid,
        data: s.dataDir,
        ...(run > 0 ? { restarts: run } : {}),
      });
    const code = await rt.exited;
    await rt.piped;
    if (stopping) {
      watch?.stop();
      await stopping;
      say.info("stopped");
      return 0;
    }
    say.error(`workerd exited on its own (code ${code})`, { code });
    // Started again only after it had served (a runtime that never became ready would only fail
    // again), and within the bound; otherwise the launcher exits for a service manager to see.
    if (r === null || !budget.allow(Date.now())) {
      if (r !== null && s.restartsPerMinute > 0)
        say.error(`workerd died more than ${s.restartsPerMinute} times in a minute: not starting it again`);
      return code === 0 ? 1 : code;
    }
    rmSync(adminSocket, { force: true });
    say.warn("starting workerd again (same data, same port): clients reconnect; every write they were told of is on disk", {
      restart: run + 1,
    });
    rt = startRuntime(s.workerd, configPath, s.runtimeDir);
    if (rt.child.pid !== undefined) lock?.setWorkerd(rt.child.pid);
    watch?.restarted();
  }
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
