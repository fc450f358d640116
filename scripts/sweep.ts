// The self-hosted relay's sweep of empty object databases. workerd makes a SQLite database (three
// files: `<id>.sqlite`, `-wal`, `-shm`) for every Durable Object a request reaches, even one that
// never writes: a GET of an unknown mailbox topic or space would leave files on disk for good. The
// launcher (scripts/serve.ts) removes them, at start and every sweep interval, by this rule
// (docs/operating.md, "Disk"):
//
// - only `<64 hex>.sqlite` files in the data directory's namespace folders (never `metadata.sqlite`);
// - only the runtime's empty database: one page whose schema table has no entry (no table was ever
//   made), with a `-wal` that is absent or empty (a WAL with frames may hold tables);
// - only files unchanged for at least `minAgeMs`;
// - never a file a process has open (a live object): the three files are first renamed aside, then
//   every process's open files (/proc/<pid>/fd) are checked for them; one still open puts all
//   three back. A file that is not open cannot change, so what was checked is what is removed; an
//   object started by name in between opens new files under the old names.
//
// Where /proc is missing (not Linux), only the sweep before the runtime starts runs.
// Runs under plain Node 22 (type stripping): erasable TypeScript only.
import { closeSync, existsSync, openSync, readdirSync, readlinkSync, readSync, realpathSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";

const OBJECT_FILE = /^[0-9a-f]{64}\.sqlite$/;
const SQLITE_MAGIC = "SQLite format 3\u0000";
const SWEEP_SUFFIX = ".sweeping";
const MAX_PAGE = 65_536;

/**
 * Whether `bytes` (a whole database file) is SQLite's empty database: the 100-byte header, one
 * page, and on it the schema table's root as a leaf table page with no cell.
 */
export function isEmptyDatabase(bytes: Uint8Array): boolean {
  if (bytes.length < 108) return false;
  for (let i = 0; i < 16; i++) if (bytes[i] !== SQLITE_MAGIC.charCodeAt(i)) return false;
  const rawPageSize = (bytes[16] << 8) | bytes[17];
  const pageSize = rawPageSize === 1 ? 65_536 : rawPageSize;
  if (pageSize < 512 || pageSize > 65_536 || (pageSize & (pageSize - 1)) !== 0) return false;
  if (bytes.length !== pageSize) return false;
  const pages = ((bytes[28] << 24) | (bytes[29] << 16) | (bytes[30] << 8) | bytes[31]) >>> 0;
  if (pages !== 1) return false;
  // Page 1's b-tree header follows the file header: type 0x0d (leaf table), cell count at +3.
  return bytes[100] === 0x0d && bytes[103] === 0 && bytes[104] === 0;
}

/** Reads at most `max` bytes of a file (a longer file is not empty anyway). */
function head(path: string, max: number): Uint8Array | null {
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    const buf = new Uint8Array(max + 1);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return buf.subarray(0, n);
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** `dev:ino` of every file under `dir` some process we can see has open; null without /proc. */
export function openFilesUnder(dir: string): Set<string> | null {
  if (!existsSync("/proc/self/fd")) return null;
  const prefix = `${realpathSync(dir)}/`;
  const open = new Set<string>();
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone, or another user's
    }
    for (const fd of fds) {
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        if (!target.startsWith(prefix)) continue;
        const st = statSync(`/proc/${pid}/fd/${fd}`);
        open.add(`${st.dev}:${st.ino}`);
      } catch {
        // closed meanwhile
      }
    }
  }
  return open;
}

export interface SweepOptions {
  /** Only files unchanged for at least this long (ms). */
  minAgeMs: number;
  /** Whether the runtime may be running: then files some process holds open are kept, and without /proc nothing is removed. */
  runtimeRunning: boolean;
  now?: number;
}

export interface SweepResult {
  /** Objects whose three files were removed. */
  removed: number;
  /** Empty databases kept because they were open (live) or too young. */
  kept: number;
}

function idOf(st: { dev: number; ino: number }): string {
  return `${st.dev}:${st.ino}`;
}

/** Removes the empty databases of objects that are not live, by the rule above. */
export function sweepEmptyDatabases(dataDir: string, opts: SweepOptions): SweepResult {
  const result: SweepResult = { removed: 0, kept: 0 };
  if (!existsSync(dataDir)) return result;
  const now = opts.now ?? Date.now();
  if (opts.runtimeRunning && !existsSync("/proc/self/fd")) return result;
  for (const ns of readdirSync(dataDir, { withFileTypes: true })) {
    if (!ns.isDirectory()) continue;
    try {
      sweepFolder(join(dataDir, ns.name), now, opts, result);
    } catch {
      // a folder or file went away meanwhile: the next sweep looks again
    }
  }
  return result;
}

/** The files of one object, renamed aside. */
type Aside = Array<{ file: string; aside: string; id: string }>;

function sweepFolder(dir: string, now: number, opts: SweepOptions, result: SweepResult): void {
  // A sweep that stopped between renaming files aside and removing them: put them back to be judged again.
  for (const name of readdirSync(dir)) {
    if (!name.endsWith(SWEEP_SUFFIX)) continue;
    const original = join(dir, name.slice(0, -SWEEP_SUFFIX.length));
    if (!existsSync(original)) renameSync(join(dir, name), original);
  }
  const candidates: Aside[] = [];
  for (const name of readdirSync(dir)) {
    if (!OBJECT_FILE.test(name)) continue;
    const main = join(dir, name);
    try {
      const st = statSync(main);
      const wal = existsSync(`${main}-wal`) ? statSync(`${main}-wal`) : null;
      if (wal && wal.size > 0) continue;
      if (!isEmptyDatabase(head(main, MAX_PAGE) ?? new Uint8Array())) continue;
      if (now - Math.max(st.mtimeMs, wal?.mtimeMs ?? 0) < opts.minAgeMs) {
        result.kept++;
        continue;
      }
      const moved: Aside = [];
      for (const file of [main, `${main}-wal`, `${main}-shm`]) {
        if (!existsSync(file)) continue;
        renameSync(file, `${file}${SWEEP_SUFFIX}`);
        moved.push({ file, aside: `${file}${SWEEP_SUFFIX}`, id: "" });
      }
      for (const m of moved) m.id = idOf(statSync(m.aside));
      candidates.push(moved);
    } catch {
      // went away meanwhile
    }
  }
  if (candidates.length === 0) return;
  // After the renames: a file some process still holds belongs to a live object. Before the
  // runtime starts nothing should hold one; where /proc is there it is checked anyway.
  const open = openFilesUnder(dir) ?? (opts.runtimeRunning ? null : new Set<string>());
  for (const moved of candidates) {
    const main = moved[0];
    const live = open === null || moved.some((m) => open.has(m.id));
    if (live || !isEmptyDatabase(head(main.aside, MAX_PAGE) ?? new Uint8Array())) {
      for (const m of moved) if (!existsSync(m.file)) renameSync(m.aside, m.file);
      result.kept++;
      continue;
    }
    for (const m of moved) rmSync(m.aside, { force: true });
    result.removed++;
  }
}
