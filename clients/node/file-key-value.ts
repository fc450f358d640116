// A KeyValue kept in one file, for Node programs that use the client SDK (and the Tally client's
// default store in Node). The file is a log: one JSON line per change, `[key, value]` or
// `[key, null]` for a delete, appended at once; on open the log is replayed, and it is rewritten
// compactly (temporary file, then rename) once it holds more than twice the live entries. A torn
// last line (a crash mid-write) is ignored. It reaches node:fs through process.getBuiltinModule, so
// importing it never pulls Node modules into a browser bundle.
import type { KeyValue } from "../tally/store";

type Fs = typeof import("node:fs");
type Path = typeof import("node:path");

function builtin<T>(name: string): T {
  const get = (globalThis as { process?: { getBuiltinModule?: (n: string) => unknown } }).process?.getBuiltinModule;
  if (!get) throw new Error(`FileKeyValue needs Node 20.16 or later (${name})`);
  return get(name) as T;
}

export class FileKeyValue implements KeyValue {
  private readonly data = new Map<string, string>();
  private readonly fs: Fs = builtin<Fs>("node:fs");
  private lines = 0;

  constructor(private readonly path: string) {
    this.fs.mkdirSync(builtin<Path>("node:path").dirname(path), { recursive: true });
    let text = "";
    try {
      text = this.fs.readFileSync(path, "utf8");
      this.fs.chmodSync(path, 0o600); // it holds decrypted data: the owner's alone (a file made by an older version too)
    } catch {
      return;
    }
    for (const line of text.split("\n")) {
      if (!line) continue;
      try {
        const [k, v] = JSON.parse(line) as [string, string | null];
        if (v === null) this.data.delete(k);
        else this.data.set(k, v);
        this.lines++;
      } catch {
        // a torn last line
      }
    }
  }

  private append(key: string, value: string | null): void {
    this.fs.appendFileSync(this.path, JSON.stringify([key, value]) + "\n", { mode: 0o600 });
    this.lines++;
    if (this.lines > 2 * this.data.size + 1_000) this.compact();
  }

  private compact(): void {
    const tmp = `${this.path}.tmp`;
    this.fs.writeFileSync(tmp, [...this.data].map((kv) => JSON.stringify(kv) + "\n").join(""), { mode: 0o600 });
    this.fs.renameSync(tmp, this.path);
    this.lines = this.data.size;
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
