// One run of `workerd serve` under the launcher (scripts/serve.ts), and the rule for starting it
// again when it dies on its own.
//
// workerd can die under load for causes the relay cannot see or prevent: measured, at its
// open-file limit an accept() that fails with EMFILE is an uncaught exception in the runtime
// ("overloaded: accept(): Too many open files", exit 1), and a flood of bare TCP connections is
// enough to cause it. Out of resources the relay refuses new work and never stops, so the launcher
// starts workerd again at once (same data, same port; every write a client was told of is on disk,
// and clients reconnect), at most `restartsPerMinute` times in any minute. A runtime that keeps
// dying (a broken binary, a full disk) makes the launcher exit non-zero instead, for a service
// manager to restart or an operator to see.
// Runs under plain Node 22 (type stripping): erasable TypeScript only.
import { type ChildProcess, spawn } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pipeLines, say } from "./launcher-log.ts";
import { withOpenFilesRaised } from "./open-files.ts";

/** The window the restart bound counts in. */
export const RESTART_WINDOW_MS = 60_000;

/**
 * The restart bound: true when one more start of the runtime at `now` keeps the starts within the
 * last minute at or under `perMinute` (records it then). Pure: the launcher's clock is passed in.
 */
export class RestartBudget {
  private readonly starts: number[] = [];
  private readonly perMinute: number;
  constructor(perMinute: number) {
    this.perMinute = perMinute;
  }

  allow(now: number): boolean {
    while (this.starts.length > 0 && now - this.starts[0]! >= RESTART_WINDOW_MS) this.starts.shift();
    if (this.starts.length >= this.perMinute) return false;
    this.starts.push(now);
    return true;
  }
}

export interface RuntimeProcess {
  child: ChildProcess;
  /** Resolves with workerd's exit code (128 when a signal ended it) once it has exited. */
  exited: Promise<number>;
  /** The exit code, once it has exited; null while it runs. */
  exitCode(): number | null;
  /** Resolves once its output has all been passed on. */
  piped: Promise<unknown>;
  /** SIGKILL, if it still runs. */
  kill(): void;
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

/**
 * Starts `workerd serve <configPath>`: in its own process group (a terminal's Ctrl-C reaches the
 * launcher only, which drains first), its open-file soft limit raised to the hard one
 * (scripts/open-files.ts), its output passed through the launcher so every line of `npm start` is
 * one JSON object, its pid in `<runtimeDir>/workerd.pid` while it runs. It dies with the launcher,
 * even one killed with SIGKILL (no handler runs then): a tiny shell, in a process group of its
 * own, reads a pipe only the launcher holds open and kills workerd when the pipe closes, which the
 * kernel does when the launcher ends, however it ends.
 */
export function startRuntime(workerd: string, configPath: string, runtimeDir: string): RuntimeProcess {
  const run = withOpenFilesRaised(workerd, ["serve", configPath]);
  const child = spawn(run.cmd, run.args, { cwd: runtimeDir, env: process.env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  const watcher = child.pid === undefined ? undefined : watchOverRuntime(child.pid);
  const piped = Promise.all([
    child.stdout ? pipeLines(child.stdout, process.stdout, "info", "workerd") : undefined,
    child.stderr ? pipeLines(child.stderr, process.stderr, "warn", "workerd") : undefined,
  ]);
  const pidFile = join(runtimeDir, "workerd.pid");
  writeFileSync(pidFile, `${child.pid}\n`);
  let code: number | null = null;
  const exited = new Promise<number>((resolveExit) =>
    child.on("exit", (c, signal) => {
      code = c ?? (signal ? 128 : 1);
      watcher?.kill("SIGKILL"); // its pid to kill is no longer workerd's
      rmSync(pidFile, { force: true });
      resolveExit(code);
    }),
  );
  child.on("error", (err) => say.error(`could not run workerd (${workerd}): ${err.message}`));
  return {
    child,
    exited,
    exitCode: () => code,
    piped,
    kill() {
      try {
        child.kill("SIGKILL");
      } catch {
        // gone
      }
    },
  };
}
