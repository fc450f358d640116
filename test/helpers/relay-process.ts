// Starting and stopping a real relay process on a free loopback port, for end-to-end tests and
// benchmarks. The target is `wrangler dev` (development) or, once built, `workerd serve`
// (self-hosting); RELAY_TARGET chooses.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
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
  /** Stops the process: SIGTERM, or SIGKILL when `kill` (a crash). */
  stop(opts?: { kill?: boolean }): Promise<void>;
  output(): string;
}

export interface StartOptions {
  target?: RelayTarget;
  port?: number;
  dataDir?: string;
  env?: Record<string, string>;
}

export function relayTarget(): RelayTarget {
  const t = process.env.RELAY_TARGET ?? "wrangler";
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

function command(target: RelayTarget, port: number, dataDir: string): { cmd: string; args: string[] } {
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
      ],
    };
  }
  return {
    cmd: process.execPath,
    args: [join(root, "scripts/serve.ts"), "--port", String(port), "--host", "127.0.0.1", "--data", dataDir],
  };
}

export async function startRelay(opts: StartOptions = {}): Promise<RelayProcess> {
  const target = opts.target ?? relayTarget();
  const port = opts.port ?? (await freePort());
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), "relay-data-"));
  const { cmd, args } = command(target, port, dataDir);
  let out = "";
  const child: ChildProcess = spawn(cmd, args, {
    cwd: root,
    env: { ...process.env, ...opts.env, NO_COLOR: "1", WRANGLER_SEND_METRICS: "false", CI: "true" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  child.stdout?.on("data", (d) => (out += d));
  child.stderr?.on("data", (d) => (out += d));
  let exited = false;
  const exit = new Promise<void>((resolve) => child.on("exit", () => ((exited = true), resolve())));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`relay exited before it was ready:\n${out}`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      process.kill(-child.pid!, "SIGKILL");
      throw new Error(`relay did not become ready in 60 s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    wsUrl: `ws://127.0.0.1:${port}`,
    port,
    dataDir,
    target,
    output: () => out,
    async stop({ kill = false } = {}) {
      if (exited) return;
      try {
        process.kill(-child.pid!, kill ? "SIGKILL" : "SIGTERM");
      } catch {
        // already gone
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          // gone
        }
      }, 5_000);
      await exit;
      clearTimeout(timer);
    },
  };
}
