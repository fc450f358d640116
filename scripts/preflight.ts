// What the launcher checks before it touches anything, and right after workerd is up:
//
// - before: the listen port is free and no relay runs on the runtime directory. A second
//   `npm start` on a busy port must stop here, before it rewrites the running relay's generated
//   config, pid file or admin socket (the running relay's drain on SIGTERM needs all three);
// - after: the Worker checks every setting at its start and answers every request with
//   500 `bad_setting` while one is wrong; the launcher asks /healthz once and stops on that answer,
//   so a wrong setting fails the start instead of the first write that reads it.
// Runs under plain Node 22 (type stripping): erasable TypeScript only.
import { existsSync, readFileSync } from "node:fs";
import { request } from "node:http";
import { createServer } from "node:net";
import { join } from "node:path";

/** A reason the start cannot go on, with the exit code the launcher ends with. */
export class StartError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** Exit code of a setting that is wrong (usage, a bad value): restarting will not help. */
export const EXIT_BAD_SETTING = 2;
/** Exit code of a start that failed for now (a busy port, a relay already running). */
export const EXIT_BUSY = 1;

/** Resolves when host:port can be listened on; rejects with a StartError naming the port and how to change it. */
export function checkPortFree(host: string, port: number): Promise<void> {
  return new Promise((resolveFree, reject) => {
    const srv = createServer();
    srv.once("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "EADDRINUSE") {
        reject(
          new StartError(
            `port ${port} on ${host} is already in use (another relay, or another program): stop it, or choose another port ` +
              `with --port (npm start -- --port ${port === 65535 ? port - 1 : port + 1}) or the RELAY_PORT setting`,
            EXIT_BUSY,
          ),
        );
      } else if (err.code === "EADDRNOTAVAIL" || err.code === "ENOTFOUND" || err.code === "EAI_AGAIN") {
        reject(
          new StartError(
            `cannot listen on ${host}: no such address on this machine; change --host or the RELAY_HOST setting`,
            EXIT_BAD_SETTING,
          ),
        );
      } else if (err.code === "EACCES") {
        reject(
          new StartError(
            `not allowed to listen on port ${port} (below 1024 needs privileges); choose another with --port or RELAY_PORT`,
            EXIT_BAD_SETTING,
          ),
        );
      } else {
        reject(new StartError(`cannot listen on ${host}:${port}: ${err.message}`, EXIT_BUSY));
      }
    });
    srv.listen({ host, port, exclusive: true }, () => srv.close(() => resolveFree()));
  });
}

/** The pid in the runtime directory's pid file when that process is a live workerd, else null. */
export function liveWorkerdPid(runtimeDir: string): number | null {
  const pidFile = join(runtimeDir, "workerd.pid");
  if (!existsSync(pidFile)) return null;
  const pid = Number(readFileSync(pidFile, "utf8").trim());
  if (!Number.isInteger(pid) || pid <= 0) return null;
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: alive, another user's; ESRCH: gone.
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return null;
  }
  try {
    // A pid file left by a crash may name a pid the system has since given to something else.
    if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("workerd")) return null;
  } catch {
    // no /proc (not Linux), or not ours to read: trust the pid file
  }
  return pid;
}

/** Refuses to start on a runtime directory a running relay uses (its config, pid file, admin socket). */
export function checkRuntimeDirFree(runtimeDir: string): void {
  const pid = liveWorkerdPid(runtimeDir);
  if (pid !== null) {
    throw new StartError(
      `a relay is already running on ${runtimeDir} (workerd pid ${pid}): stop it first, or give this one another --runtime-dir (RELAY_RUNTIME_DIR)`,
      EXIT_BUSY,
    );
  }
}

/** The address the launcher reaches its own relay at: a wildcard listen address is asked on loopback. */
export function probeHost(host: string): string {
  const h = host.replace(/^\[|\]$/g, "");
  if (h === "0.0.0.0" || h === "") return "127.0.0.1";
  if (h === "::") return "::1";
  return h;
}

export interface HealthAnswer {
  status: number;
  body: string;
}

/** GET /healthz on the relay's listener. */
export function getHealthz(host: string, port: number, timeoutMs = 5_000): Promise<HealthAnswer> {
  return new Promise((resolveAnswer, reject) => {
    const req = request({ host: probeHost(host), port, path: "/healthz", method: "GET", timeout: timeoutMs }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (body += d));
      res.on("end", () => resolveAnswer({ status: res.statusCode ?? 0, body }));
    });
    req.on("timeout", () => req.destroy(new Error("GET /healthz timed out")));
    req.on("error", reject);
    req.end();
  });
}

/** The message of a 500 `bad_setting` answer ("NAME: why"), or null for any other answer. */
export function badSettingMessage(answer: HealthAnswer): string | null {
  if (answer.status !== 500) return null;
  try {
    const e = JSON.parse(answer.body)?.error;
    if (e?.code === "bad_setting") return typeof e.message === "string" ? e.message : "a setting is wrong";
  } catch {
    // not JSON: not a settings answer
  }
  return null;
}
