// A KeyValue kept in one JSON file, written atomically (temporary file, then rename), for Node
// programs that use the client SDK. Small by design: it rewrites the file on every change.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { KeyValue } from "../tally/store";

export class FileKeyValue implements KeyValue {
  private data: Record<string, string>;

  constructor(private readonly path: string) {
    try {
      this.data = JSON.parse(readFileSync(path, "utf8")) as Record<string, string>;
    } catch {
      this.data = {};
    }
  }

  private flush(): void {
    mkdirSync(dirname(this.path), { recursive: true });
    const tmp = `${this.path}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.data));
    renameSync(tmp, this.path);
  }

  async get(key: string) {
    return Object.hasOwn(this.data, key) ? this.data[key] : undefined;
  }
  async set(key: string, value: string) {
    this.data[key] = value;
    this.flush();
  }
  async delete(key: string) {
    if (!Object.hasOwn(this.data, key)) return;
    delete this.data[key];
    this.flush();
  }
  async keys(prefix: string) {
    return Object.keys(this.data).filter((k) => k.startsWith(prefix));
  }
}
