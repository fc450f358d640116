// Starting and stopping a real relay process on a free loopback port, for end-to-end tests and
// benchmarks. The target is `workerd serve` through `npm start`'s launcher (self-hosting, the
// default) or `wrangler dev` (development); RELAY_TARGET chooses.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export type RelayTarget = "wrangler" | "workerd";

export interface RelayProcess {
  url: string; // http://127.0.0.1:PORT
  wsUrl: string; // ws://127.0.0.1:PORT
  port: number;
  dataDir: string;
  target: RelayTarget;
  /** The pid of the process started (the launcher, or wrangler); the runtime is among its descendants. */
  pid: number;
  /** The launcher's runtime directory (workerd target): generated config, admin.sock, workerd.pid. */
  runtimeDir: string;
  /**
   * Stops the relay: SIGTERM to the launcher (a clean shutdown), or with `kill` a crash: SIGKILL to
   * the runtime itself (workerd; for wrangler, its whole process group). Resolves with the
   * launcher's exit code (null when it died by a signal).
   */
  stop(opts?: { kill?: boolean }): Promise<number | null>;
  /** Resolves with the launcher's exit code once it exits by itself (null when it died by a signal). */
  exited(): Promise<number | null>;
  /** The pid of the workerd process serving the relay (workerd target), else undefined. */
  runtimePid(): number | undefined;
  output(): string;
}

export interface StartOptions {
  target?: RelayTarget;
  port?: number;
  dataDir?: string;
  env?: Record<string, string>;
  /** Where the relay may connect out (workerd target: --outbound); default public,local (the tests' loopback push services). */
  outbound?: string;
  /** The open-file limit (soft and hard) the relay starts under (`ulimit -n`), for tests of running out of it. */
  openFiles?: number;
}

export function relayTarget(): RelayTarget {
  const t = process.env.RELAY_TARGET ?? "workerd";
  if (t !== "wrangler" && t !== "workerd") throw new Error(`RELAY_TARGET must be wrangler or workerd, not ${t}`);
  return t;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

const root = new URL("../../", import.meta.url).pathname;

/**
 * The setting that lets the relay push to the tests' loopback push services (test/helpers/
 * push-service.ts): without it, docs/mailbox.md's endpoint rule refuses them like any other
 * loopback address.
 */
export const TEST_PUSH_ALLOW = "http://127.0.0.1";

function command(
  target: RelayTarget,
  port: number,
  dataDir: string,
  runtimeDir: string,
  pushAllow: string,
  outbound = "public,local",
): { cmd: string; args: string[] } {
  if (target === "wrangler") {
    return {
      cmd: join(root, "node_modules/.bin/wrangler"),
      args: [
        "dev",
        "--ip",
        "127.0.0.1",
        "--port",
        String(port),
        "--persist-to",
        dataDir,
        "--inspector-port",
        "0",
        "--show-interactive-dev-session=false",
        "--log-level",
        "warn",
        // The tests' push services on loopback pass docs/mailbox.md's endpoint rule only by name.
        "--var",
        `PUSH_ENDPOINT_ALLOW:${pushAllow}`,
        // On loopback only, like `npm start` here: the status pages open without ADMIN_TOKEN.
        "--var",
        "RELAY_LOOPBACK_ONLY:true",
      ],
    };
  }
  // The bundle is built once per run (test/helpers/global-relay.ts, bench/), not per start.
  return {
    cmd: process.execPath,
    args: [
      join(root, "scripts/serve.ts"),
      "--no-build",
      "--port",
      String(port),
      "--host",
      "127.0.0.1",
      "--data",
      dataDir,
      "--runtime-dir",
      runtimeDir,
      // Loopback too: tests stand up their own push services on 127.0.0.1 (allowed by
      // PUSH_ENDPOINT_ALLOW, set in startRelay's environment).
      "--outbound",
      outbound,
      "--grace",
      "10",
    ],
  };
}

export async function startRelay(opts: StartOptions = {}): Promise<RelayProcess> {
  const target = opts.target ?? relayTarget();
  const port = opts.port ?? (await freePort());
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), "relay-data-"));
  const runtimeDir = mkdtempSync(join(tmpdir(), "relay-run-"));
  const { cmd, args } = command(target, port, dataDir, runtimeDir, opts.env?.PUSH_ENDPOINT_ALLOW ?? TEST_PUSH_ALLOW, opts.outbound);
  let out = "";
  const limited =
    opts.openFiles === undefined
      ? { cmd, args }
      : { cmd: "/bin/sh", args: ["-c", `ulimit -n ${opts.openFiles} && exec "$0" "$@"`, cmd, ...args] };
  const child: ChildProcess = spawn(limited.cmd, limited.args, {
    cwd: root,
    env: { ...process.env, PUSH_ENDPOINT_ALLOW: TEST_PUSH_ALLOW, ...opts.env, NO_COLOR: "1", WRANGLER_SEND_METRICS: "false", CI: "true" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  child.stdout?.on("data", (d) => (out += d));
  child.stderr?.on("data", (d) => (out += d));
  let exited = false;
  let exitCode: number | null = null;
  const exit = new Promise<void>((resolve) =>
    child.on("exit", (code) => {
      exited = true;
      exitCode = code;
      resolve();
    }),
  );
  const pidFile = join(runtimeDir, "workerd.pid");
  let workerdPid: number | undefined;
  const runtimePid = () => {
    if (target !== "workerd") return undefined;
    // The file names the runtime now running: the launcher starts a new one when one dies on its own.
    if (existsSync(pidFile)) workerdPid = Number(readFileSync(pidFile, "utf8").trim()) || workerdPid;
    return workerdPid;
  };
  const signal = (pid: number | undefined, sig: NodeJS.Signals) => {
    if (pid === undefined) return;
    try {
      process.kill(pid, sig);
    } catch {
      // gone
    }
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`relay exited before it was ready:\n${out}`);
    try {
      // The launcher's own word as well (its "listening on" line): before it, a runtime that dies is
      // one that never became ready, which the launcher does not start again.
      const res = await fetch(`${url}/healthz`);
      if (res.ok && (target !== "workerd" || /listening on http/.test(out))) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      signal(runtimePid(), "SIGKILL");
      process.kill(-child.pid!, "SIGKILL");
      throw new Error(`relay did not become ready in 60 s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  runtimePid();
  return {
    url,
    wsUrl: `ws://127.0.0.1:${port}`,
    port,
    dataDir,
    target,
    output: () => out,
    pid: child.pid!,
    runtimeDir,
    runtimePid,
    exited: () => exit.then(() => exitCode),
    async stop({ kill = false } = {}) {
      if (exited) return exitCode;
      if (kill && target === "workerd") {
        // A crash of the whole relay: the launcher first (so it starts nothing again), then the runtime.
        const pid = runtimePid();
        signal(-child.pid!, "SIGKILL");
        signal(pid, "SIGKILL");
      } else signal(-child.pid!, kill ? "SIGKILL" : "SIGTERM");
      const timer = setTimeout(() => {
        signal(runtimePid(), "SIGKILL");
        signal(-child.pid!, "SIGKILL");
      }, 15_000);
      await exit;
      clearTimeout(timer);
      // The runtime is gone too before this resolves (a next start on the data directory finds it free).
      const pid = runtimePid();
      for (let i = 0; pid !== undefined && i < 100 && existsSync(`/proc/${pid}`); i++) await new Promise((r) => setTimeout(r, 50));
      return exitCode;
    },
  };
}
