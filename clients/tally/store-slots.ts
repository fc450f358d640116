// One store per open client (the Tally protocol section 1: every tab, every process is a device of its own,
// and each device dedups against its own processed set, section 7). Two clients of one user on
// one machine (two tabs of a browser profile, two Node processes in one folder) must not share a
// store: the second would find every message already processed, and in Node the two would
// overwrite each other's log file.
//
// Decision: the default store of a user is a numbered *slot*. An open client holds its slot with a
// lock for as long as it lives: slot 0 is the store earlier versions used (IndexedDB database
// `tally-<npub>`, file `<npub>.log`), slot i > 0 is `tally-<npub>-<i>` / `<npub>.<i>.log`. A new
// client takes the lowest free slot, so a reloaded tab or a restarted process finds its own store
// again, and a second tab or process gets another. Browsers lock with the Web Locks API (released
// when the tab goes); Node with a lock file `<log>.lock` holding the process id (taken over when
// that process is gone). Where neither exists the store is slot 0, as before.
import type { KeyValue } from "./store";

/** How many slots one user's default stores may use on one machine. */
export const MAX_STORE_SLOTS = 16;

/** A claimed slot: its number, and the release of its lock. */
export interface Slot {
  index: number;
  release(): void;
}

export interface LockManagerLike {
  request(name: string, options: { ifAvailable: boolean }, fn: (lock: unknown) => Promise<void> | void): Promise<unknown>;
}

/** Claims the lowest free slot of `npub` with Web Locks (slot 0 without them). */
export async function claimBrowserSlot(npub: string, locks: LockManagerLike | undefined): Promise<Slot> {
  if (!locks) return { index: 0, release: () => {} };
  for (let index = 0; index < MAX_STORE_SLOTS; index++) {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const got = await new Promise<boolean>((resolve) => {
      void locks.request(`tally-store:${npub}:${index}`, { ifAvailable: true }, (lock) => {
        resolve(lock !== null);
        return lock === null ? undefined : held;
      });
    });
    if (got) return { index, release };
  }
  throw new Error(`more than ${MAX_STORE_SLOTS} Tally clients of one user are open in this browser profile`);
}

/** The IndexedDB database of a slot. */
export function browserStoreName(npub: string, index: number): string {
  return index === 0 ? `tally-${npub}` : `tally-${npub}-${index}`;
}

/** The log file of a slot in `dir`. */
export function nodeStorePath(dir: string, npub: string, index: number): string {
  return index === 0 ? `${dir}/${npub}.log` : `${dir}/${npub}.${index}.log`;
}

type Fs = typeof import("node:fs");
export interface NodeProcess {
  pid: number;
  kill(pid: number, signal: 0): boolean;
  on(event: "exit", fn: () => void): unknown;
}

/** Lock files this process holds (a second client in the same process takes another slot). */
export const heldHere = new Set<string>();
let exitHook = false;

function alive(proc: NodeProcess, pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (pid === proc.pid) return true;
  try {
    proc.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === "EPERM"; // alive, someone else's
  }
}

/** Claims the lowest free slot of `npub` in `dir` with lock files (Node). */
export function claimNodeSlot(fs: Fs, proc: NodeProcess, dir: string, npub: string): Slot {
  fs.mkdirSync(dir, { recursive: true });
  if (!exitHook) {
    exitHook = true;
    proc.on("exit", () => {
      for (const lock of heldHere) {
        try {
          fs.unlinkSync(lock);
        } catch {
          // gone already
        }
      }
    });
  }
  for (let index = 0; index < MAX_STORE_SLOTS; index++) {
    const lock = `${nodeStorePath(dir, npub, index)}.lock`;
    if (heldHere.has(lock)) continue;
    if (!takeLock(fs, proc, lock)) continue;
    heldHere.add(lock);
    return {
      index,
      release: () => {
        if (!heldHere.delete(lock)) return;
        try {
          fs.unlinkSync(lock);
        } catch {
          // gone already
        }
      },
    };
  }
  throw new Error(`more than ${MAX_STORE_SLOTS} Tally clients of one user are open on the store folder ${dir}`);
}

/** Takes a lock file (free, or left by a process that is gone); false when a live client holds it. */
export function takeLock(fs: Fs, proc: NodeProcess, lock: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(lock, String(proc.pid), { flag: "wx", mode: 0o600 });
      return true;
    } catch (err) {
      if ((err as { code?: string }).code !== "EEXIST") throw err;
    }
    let owner = NaN;
    try {
      owner = Number(fs.readFileSync(lock, "utf8").trim());
    } catch {
      continue; // removed meanwhile: try again
    }
    // Held by a live process (this one included: a client here that did not close): not free.
    if (alive(proc, owner) && !(owner === proc.pid && !heldHere.has(lock))) return false;
    // A lock left by a process that is gone (or by this process, unclaimed): take it over.
    try {
      fs.unlinkSync(lock);
    } catch {
      // someone else took it over first: the exclusive create decides
    }
  }
  return false;
}

/** A KeyValue that becomes usable once `inner` resolves (a slot being claimed). */
export class DeferredKeyValue implements KeyValue {
  constructor(readonly inner: Promise<KeyValue>) {}
  async get(key: string) {
    return (await this.inner).get(key);
  }
  async set(key: string, value: string) {
    return (await this.inner).set(key, value);
  }
  async delete(key: string) {
    return (await this.inner).delete(key);
  }
  async keys(prefix: string) {
    return (await this.inner).keys(prefix);
  }
}
