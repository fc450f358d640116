// Crash safety: a write acknowledged to the app survives the process being killed (SIGKILL) at
// any point, including in the middle of the next write.
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DatabaseSync } from "node:sqlite";
import { SqliteStore } from "../../../../../clients/passnote/stores/sqlite";

const writer = new URL("../../../../helpers/passnote-store-writer.ts", import.meta.url).pathname;
const firstTurn = new URL("../../../../helpers/passnote-first-turn-child.ts", import.meta.url).pathname;

interface Ack {
  n: number;
  collection: string;
  key: string;
  hlc: string;
}

/** Runs the writer on `db` and kills it with SIGKILL once it has acknowledged `after` writes (or more: the kill lands mid-stream). */
function writeUntilKilled(db: string, after: number, node: string): Promise<Ack[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "--no-warnings", writer, db, node], { stdio: ["ignore", "pipe", "pipe"] });
    const acks: Ack[] = [];
    let buf = "";
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    child.stdout.on("data", (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split("\n");
      buf = lines.pop()!;
      for (const line of lines) {
        const [, n, collection, key, hlc] = line.split(" ");
        acks.push({ n: Number(n), collection, key, hlc });
      }
      if (acks.length >= after && child.exitCode === null && !child.killed) child.kill("SIGKILL");
    });
    child.on("exit", (code, signal) => (signal === "SIGKILL" ? resolve(acks) : reject(new Error(`writer ended with ${code}: ${err}`))));
  });
}

describe("SQLite store: crash safety", () => {
  it("a SIGKILL mid-write loses nothing that was acknowledged to the app", async () => {
    const db = join(mkdtempSync(join(tmpdir(), "passnote-crash-")), "crash.db");
    const all: Ack[] = [];
    // Three lives, each killed at a random point; each reopens what the last one left.
    for (let life = 0; life < 3; life++) {
      const acks = await writeUntilKilled(db, 200 + Math.floor(Math.random() * 1_500), `w${life}`);
      expect(acks.length).toBeGreaterThan(0);
      all.push(...acks);
      const store = await SqliteStore.open(db);
      // Every acknowledged write is there: the document holds that version or a later one.
      const latest = new Map<string, Ack>();
      for (const a of all) latest.set(`${a.collection}/${a.key}`, a);
      for (const [id, a] of latest) {
        const r = store.get(a.collection, a.key);
        expect(r, id).toBeDefined();
        expect(r!.hlc >= a.hlc, id).toBe(true);
        // whole documents only: the value is one complete version
        const v = r!.value as { n: number; text: string; list: unknown[] };
        expect(v.text).toBe("x".repeat(v.n % 500));
        expect(v.list).toEqual([v.n, v.n / 2, `${v.n}`]);
      }
      await store.close();
    }
  }, 60_000);
});

describe("SQLite store: keys durable before the first records", () => {
  it("keys first: a device killed (SIGKILL) in the turn it founded its group and wrote its first records leaves a file that holds its keys with them", async () => {
    const db = join(mkdtempSync(join(tmpdir(), "passnote-keys-first-")), "device.db");
    await new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", "tsx", "--no-warnings", firstTurn, db], { stdio: ["ignore", "pipe", "pipe"] });
      let err = "";
      child.stderr.on("data", (d) => (err += d));
      child.stdout.on("data", (d: Buffer) => {
        if (d.toString().includes("put")) child.kill("SIGKILL");
      });
      child.on("exit", (code, signal) => (signal === "SIGKILL" ? resolve() : reject(new Error(`the device ended with ${code}: ${err}`))));
    });
    // The file as the kill left it, read directly.
    const file = new DatabaseSync(db); // read only by its SELECTs: opening it read-write lets SQLite recover the WAL the kill left;
    const records = file.prepare("SELECT collection, key FROM records").all() as Array<{ collection: string; key: string }>;
    const keys = file.prepare("SELECT value FROM meta WHERE name = 'keys'").get();
    file.close();
    expect(records.map((r) => `${r.collection}/${r.key}`).sort()).toEqual(
      ["_roster", "notes/n0", "notes/n1", "notes/n2"].map((x, i) => (i === 0 ? expect.stringMatching(/^_roster\//) : x)),
    );
    expect(keys).toBeDefined();
  }, 30_000);
});
