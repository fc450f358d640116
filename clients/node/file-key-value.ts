// A KeyValue kept in one file, for Node programs that use the client SDK (and the Tally client's
// default store in Node). The file is a log: one JSON line per change, `[key, value]` or
// `[key, null]` for a delete, appended and fsynced before the call returns; on open the log is
// replayed, and it is rewritten compactly (temporary file, fsync, rename, fsync of the folder)
// once it holds more than twice the live entries. A torn last line (a crash mid-write) is cut off
// on open and the file fsynced, so the next record starts on a line of its own and survives the
// next restart. It reaches node:fs through process.getBuiltinModule, so importing it never pulls
// Node modules into a browser bundle.
import type { KeyValue } from "../tally/store";

type Fs = typeof import("node:fs");
type Path = typeof import("node:path");

function builtin<T>(name: string): T {
  const get = (globalThis as { process?: { getBuiltinModule?: (n: string) => unknown } }).process?.getBuiltinModule;
  if (!get) throw new Error(`FileKeyValue needs Node 20.16 or later (${name})`);
  return get(name) as T;
}

const NEWLINE = 0x0a;

export class FileKeyValue implements KeyValue {
  private readonly data = new Map<string, string>();
  private readonly fs: Fs = builtin<Fs>("node:fs");
  private readonly dir: string;
  private lines = 0;

  constructor(private readonly path: string) {
    this.dir = builtin<Path>("node:path").dirname(path);
    this.fs.mkdirSync(this.dir, { recursive: true });
    let bytes: Uint8Array;
    try {
      bytes = this.fs.readFileSync(path);
      this.fs.chmodSync(path, 0o600); // it holds decrypted data: the owner's alone (a file made by an older version too)
    } catch {
      return;
    }
    const end = this.replay(bytes);
    if (end < bytes.length) this.cutTail(end);
  }

  /** Replays the log; returns the length of its whole lines (a torn last line is past it). */
  private replay(bytes: Uint8Array): number {
    const decoder = new TextDecoder();
    let start = 0;
    let good = 0;
    while (start < bytes.length) {
      const nl = bytes.indexOf(NEWLINE, start);
      const line = decoder.decode(bytes.subarray(start, nl === -1 ? bytes.length : nl));
      if (nl === -1) return good; // no newline: the write stopped inside this record
      start = nl + 1;
      if (!line) {
        good = start;
        continue;
      }
      try {
        const [k, v] = JSON.parse(line) as [string, string | null];
        if (v === null) this.data.delete(k);
        else this.data.set(k, v);
        this.lines++;
        good = start;
      } catch {
        // A line that does not parse: only a torn write leaves one, and only at the end.
        if (start >= bytes.length) return good;
      }
    }
    return good;
  }

  /** Cuts a torn tail off at `end` and makes the cut durable before anything is appended. */
  private cutTail(end: number): void {
    const fd = this.fs.openSync(this.path, "r+");
    try {
      this.fs.ftruncateSync(fd, end);
      this.fs.fsyncSync(fd);
    } finally {
      this.fs.closeSync(fd);
    }
  }

  private append(key: string, value: string | null): void {
    const fd = this.fs.openSync(this.path, "a", 0o600);
    try {
      this.fs.writeSync(fd, JSON.stringify([key, value]) + "\n");
      this.fs.fsyncSync(fd);
    } finally {
      this.fs.closeSync(fd);
    }
    this.lines++;
    if (this.lines > 2 * this.data.size + 1_000) this.compact();
  }

  private compact(): void {
    const tmp = `${this.path}.tmp`;
    const fd = this.fs.openSync(tmp, "w", 0o600);
    try {
      this.fs.writeSync(fd, [...this.data].map((kv) => JSON.stringify(kv) + "\n").join(""));
      this.fs.fsyncSync(fd);
    } finally {
      this.fs.closeSync(fd);
    }
    this.fs.renameSync(tmp, this.path);
    this.syncDir();
    this.lines = this.data.size;
  }

  /** Makes a rename durable (the folder's entry); a platform that cannot open a folder skips it. */
  private syncDir(): void {
    let fd: number | undefined;
    try {
      fd = this.fs.openSync(this.dir, "r");
      this.fs.fsyncSync(fd);
    } catch {
      // Windows cannot fsync a folder
    } finally {
      if (fd !== undefined) this.fs.closeSync(fd);
    }
  }

  async get(key: string) {
    return this.data.get(key);
  }
  async set(key: string, value: string) {
    this.data.set(key, value);
    this.append(key, value);
  }
  async delete(key: string) {
    if (!this.data.delete(key)) return;
    this.append(key, null);
  }
  async keys(prefix: string) {
    return [...this.data.keys()].filter((k) => k.startsWith(prefix));
  }
}
