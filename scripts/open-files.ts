// The runtime's open-file limit (docs/operating.md, "Open files"). Every connected device holds
// two file descriptors in workerd (measured: its connection and a duplicate of it), and every
// object live at that moment three more (its SQLite database, -wal and -shm) for the 10 s it stays
// live after its last event. Past the limit, workerd cannot accept a connection or open a database:
// the relay then refuses new work with 503 (workers/out-of-resources.ts), but the limit decides
// how many devices one process holds. Node cannot raise its own limit (no setrlimit), so the
// launcher starts workerd through /bin/sh, which raises the soft limit to the hard one first, and
// says at start how many devices that allows.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

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

/** About how many idle devices a limit of `n` open files holds at once (beside the reserve; registering objects need 3 more each while live). */
export function devicesAllowed(n: number): number {
  return Math.max(0, Math.floor((n - OPEN_FILES_RESERVE) / FILES_PER_DEVICE));
}
