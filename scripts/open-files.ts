// The runtime's open-file limit (docs/operating.md, "Open files"). Every connected device holds
// two file descriptors in workerd (measured: its connection and a duplicate of it), and every
// object live at that moment three more (its SQLite database, -wal and -shm) for the 10 s it stays
// live after its last event. Past the limit, workerd cannot accept a connection or open a database:
// the relay then refuses new work with 503 (workers/out-of-resources.ts), but the limit decides
// how many devices one process holds. Node cannot raise its own limit (no setrlimit), so the
// launcher starts workerd through /bin/sh, which raises the soft limit to the hard one first, and
// says at start how many devices that allows.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";

/** Descriptors kept for what is not a device: the listening sockets, the live objects' databases, logs, the config. */
export const OPEN_FILES_RESERVE = 256;

/** The shell that raises the soft open-file limit to the hard one, then becomes the program (exec: same pid). */
const RAISE = 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"';

/** The command that runs `program args` with the soft open-file limit raised to the hard one (as it is without /bin/sh). */
export function withOpenFilesRaised(program: string, args: string[]): { cmd: string; args: string[] } {
  if (process.platform === "win32" || !existsSync("/bin/sh")) return { cmd: program, args };
  return { cmd: "/bin/sh", args: ["-c", RAISE, program, ...args] };
}

/** The open-file limit the runtime will have (the hard limit, which the soft one is raised to), or null when unknown. */
export function runtimeOpenFiles(): number | null {
  if (process.platform === "win32" || !existsSync("/bin/sh")) return null;
  const r = spawnSync("/bin/sh", ["-c", "ulimit -Hn"], { encoding: "utf8" });
  const out = r.stdout?.trim();
  if (out === "unlimited") return Number.POSITIVE_INFINITY;
  const n = Number(out);
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

/** Descriptors per connected device in workerd (measured). */
export const FILES_PER_DEVICE = 2;

/**
 * About how many idle devices a limit of `n` open files holds at once: below the point where new
 * upgrades are refused (filesMargin), beside the reserve; registering objects need 3 more each
 * while live.
 */
export function devicesAllowed(n: number): number {
  return Math.max(0, Math.floor((n - filesMargin(n) - OPEN_FILES_RESERVE) / FILES_PER_DEVICE));
}

/**
 * Descriptors kept free below the limit: once the runtime holds `limit - margin`, new upgrades are
 * refused (the Worker answers 503) until it is back under `limit - 1.5 * margin`. A register costs
 * about 5 descriptors while its object is live (2 for the connection, 3 for the database), and the
 * watch below reads the count at most every FILES_POLL_MIN_MS, so the margin is the room for what
 * arrives between two reads: at least FILES_MARGIN_MIN, else FILES_MARGIN_SHARE of the limit.
 */
export const FILES_MARGIN_MIN = 256;
export const FILES_MARGIN_SHARE = 0.05;
/** Shortest and longest wait between two counts of the runtime's descriptors, ms. */
export const FILES_POLL_MIN_MS = 100;
export const FILES_POLL_MAX_MS = 5_000;
/** The growth the wait between two counts is sized for: descriptors a second (about 400 registers a second). */
export const FILES_GROWTH_PER_SECOND = 2_000;

export function filesMargin(limit: number): number {
  return Math.max(FILES_MARGIN_MIN, Math.ceil(limit * FILES_MARGIN_SHARE));
}

/** Whether new upgrades are refused, given whether they were and the runtime's descriptors now (hysteresis of half a margin). */
export function crowdedNext(crowded: boolean, open: number, limit: number): boolean {
  const margin = filesMargin(limit);
  return crowded ? open > limit - margin - Math.floor(margin / 2) : open >= limit - margin;
}

/**
 * The wait before the next count: the time the room left before the refusal point would take to
 * fill at FILES_GROWTH_PER_SECOND, between FILES_POLL_MIN_MS and FILES_POLL_MAX_MS; a crowded
 * runtime is counted once a second (only its way back down is waited for). Far from the limit an
 * idle relay counts every 5 s: a read of /proc/<pid>/fd, microseconds per descriptor.
 */
export function pollDelayMs(crowded: boolean, open: number, limit: number): number {
  if (crowded) return 1_000;
  const room = limit - filesMargin(limit) - open;
  return Math.min(FILES_POLL_MAX_MS, Math.max(FILES_POLL_MIN_MS, Math.floor((room / FILES_GROWTH_PER_SECOND) * 1000)));
}

/** The descriptors process `pid` holds (Linux: /proc/<pid>/fd), or null when they cannot be counted. */
export function openFilesOf(pid: number): number | null {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return null;
  }
}

export interface OpenFilesWatch {
  /** A new runtime was started (same limit): it starts uncrowded, so the state is told again. */
  restarted(): void;
  stop(): void;
}

/**
 * Counts the runtime's descriptors (at pollDelayMs) and tells the Worker when new upgrades must be
 * refused or may be taken again (`tell`: POST /crowded on the admin socket), so devices connecting
 * never bring the runtime to its limit (where an accept() that fails ends it). Nothing is told
 * while the state is unchanged. A count that fails (no /proc, the runtime between two lives) waits
 * FILES_POLL_MAX_MS and tries again.
 */
export function watchOpenFiles(o: {
  pid: () => number | undefined;
  limit: number;
  tell: (crowded: boolean, open: number) => Promise<void>;
  count?: (pid: number) => number | null;
  setTimer?: (fn: () => void, ms: number) => { unref?: () => void };
  clearTimer?: (t: unknown) => void;
}): OpenFilesWatch {
  const count = o.count ?? openFilesOf;
  const setTimer = o.setTimer ?? ((fn, ms) => setTimeout(fn, ms));
  const clearTimer = o.clearTimer ?? ((t) => clearTimeout(t as ReturnType<typeof setTimeout>));
  let told = false;
  let stopped = false;
  let timer: unknown;
  const tick = async () => {
    if (stopped) return;
    const pid = o.pid();
    const open = pid === undefined ? null : count(pid);
    let wait = FILES_POLL_MAX_MS;
    if (open !== null) {
      const next = crowdedNext(told, open, o.limit);
      if (next !== told) {
        try {
          await o.tell(next, open);
          told = next;
        } catch {
          // the runtime is between two lives, or busy: counted again shortly
        }
      }
      wait = pollDelayMs(told, open, o.limit);
    }
    if (stopped) return;
    const t = setTimer(() => void tick(), wait);
    t.unref?.();
    timer = t;
  };
  void tick();
  return {
    restarted() {
      told = false;
    },
    stop() {
      stopped = true;
      if (timer !== undefined) clearTimer(timer);
    },
  };
}
