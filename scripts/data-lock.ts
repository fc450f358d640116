// One relay process holds a data directory at a time. Two runtimes on one data directory would
// both serve the same objects, each with its own memory (a ban made through one ignored by the
// other, every in-memory bound halved in effect) and both writing the same SQLite files.
//
// The lock is a file in the data directory, `relay.lock`, created exclusively (O_EXCL) and holding
// the launcher's pid, then workerd's. It is held while either process lives (checked by pid and,
// on Linux, by the process's command line, so a pid the system gave to another program since a
// crash does not count). A lock whose processes are gone (a machine that lost power, a launcher
// killed with workerd) is taken over with a log line. The launcher removes it when it exits.
// Runs under plain Node 22 (type stripping): erasable TypeScript only.
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { EXIT_BUSY, StartError } from "./preflight.ts";

/** The lock file's name in the data directory. */
export const LOCK_FILE = "relay.lock";

export interface LockHolder {
  /** The launcher's pid (scripts/serve.ts). */
  launcher: number;
  /** workerd's pid, once it runs. */
  workerd?: number;
  /** Where it listens (host:port). */
  listen: string;
  /** When it took the lock (ISO time). */
  since: string;
}

/** Whether `pid` is a live process whose command line contains `marker` (without /proc: alive is enough). */
export function liveProcess(pid: number | undefined, marker: string): boolean {
  if (!Number.isInteger(pid) || (pid as number) <= 0) return false;
  try {
    process.kill(pid as number, 0);
  } catch (err) {
    // EPERM: alive, another user's; ESRCH: gone.
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(marker);
  } catch {
    return true; // no /proc (not Linux), or not ours to read: alive is all we know
  }
}

/** Whether the holder named in a lock file still runs: its launcher or its workerd. */
export function holderAlive(h: LockHolder): boolean {
  return liveProcess(h.launcher, "serve.ts") || liveProcess(h.workerd, "workerd");
}

function readHolder(path: string): LockHolder | null {
  try {
    const v = JSON.parse(readFileSync(path, "utf8"));
    return typeof v === "object" && v !== null && Number.isInteger(v.launcher) ? (v as LockHolder) : null;
  } catch {
    return null; // gone, or torn by a crash while it was written: no holder to honour
  }
}

/** "launcher pid 12, workerd pid 13, listening on 127.0.0.1:8787 since ..." */
export function describeHolder(h: LockHolder): string {
  return `launcher pid ${h.launcher}${h.workerd ? `, workerd pid ${h.workerd}` : ""}, listening on ${h.listen}, since ${h.since}`;
}

export interface DataLock {
  path: string;
  /** The holder a lock left behind by processes that are gone, taken over; else null. */
  tookOverFrom: LockHolder | null;
  /** Writes workerd's pid into the lock. */
  setWorkerd(pid: number): void;
  /** Removes the lock if it is still ours. */
  release(): void;
}

/**
 * Takes the data directory's lock (making the directory, 0700, when it is missing), or throws a
 * StartError (exit 1) naming the relay that holds it.
 */
export function acquireDataLock(dataDir: string, listen: string): DataLock {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, LOCK_FILE);
  const mine: LockHolder = { launcher: process.pid, listen, since: new Date().toISOString() };
  let tookOverFrom: LockHolder | null = null;
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      try {
        writeSync(fd, `${JSON.stringify(mine)}\n`);
      } finally {
        closeSync(fd);
      }
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST" || attempt >= 2) throw err;
    }
    const held = readHolder(path);
    if (held && held.launcher !== process.pid && holderAlive(held)) {
      throw new StartError(
        `the data directory ${dataDir} is in use by another relay (${describeHolder(held)}): ` +
          "one relay runs on a data directory at a time; stop that one first, or give this one another --data (RELAY_DATA_DIR)",
        EXIT_BUSY,
      );
    }
    // Left by processes that are gone: take it over.
    tookOverFrom = held;
    rmSync(path, { force: true });
  }
  const write = (h: LockHolder) => {
    writeFileSync(`${path}.${process.pid}.tmp`, `${JSON.stringify(h)}\n`, { mode: 0o600 });
    renameSync(`${path}.${process.pid}.tmp`, path);
  };
  return {
    path,
    tookOverFrom,
    setWorkerd(pid: number) {
      mine.workerd = pid;
      write(mine);
    },
    release() {
      if (readHolder(path)?.launcher === process.pid) rmSync(path, { force: true });
    },
  };
}
