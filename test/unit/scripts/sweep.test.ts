// The launcher's sweep of empty object databases (scripts/sweep.ts): which files it removes, and
// that it never removes a file that holds a table or that a process has open.
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { isEmptyDatabase, sweepEmptyDatabases } from "../../../scripts/sweep";

/** SQLite's empty database as the runtime writes it: one page, its schema table with no entry. */
function emptyDatabase(pageSize = 4096): Uint8Array {
  const b = new Uint8Array(pageSize);
  b.set(new TextEncoder().encode("SQLite format 3\u0000"), 0);
  b[16] = (pageSize >> 8) & 0xff;
  b[17] = pageSize & 0xff;
  b[18] = 2;
  b[19] = 2;
  b[21] = 64;
  b[22] = 32;
  b[23] = 32;
  b[31] = 1; // one page
  b[100] = 0x0d; // leaf table page, no cell
  b[105] = pageSize === 65_536 ? 0 : (pageSize >> 8) & 0xff;
  return b;
}

/** The same file once a table was made: the schema table holds a cell. */
function databaseWithTable(): Uint8Array {
  const b = emptyDatabase();
  b[104] = 1;
  return b;
}

const ID = (n: number) => n.toString(16).padStart(64, "0");
const open: number[] = [];
afterEach(() => {
  for (const fd of open.splice(0)) closeSync(fd);
});

function dataDir(): { dir: string; ns: string } {
  const dir = mkdtempSync(join(tmpdir(), "sweep-"));
  const ns = join(dir, "edge-relay-MincaMailbox");
  mkdirSync(ns);
  writeFileSync(join(ns, "metadata.sqlite"), emptyDatabase());
  return { dir, ns };
}

/** One object's three files, `ageMs` old. */
function object(ns: string, n: number, main: Uint8Array, wal = new Uint8Array(), ageMs = 3_600_000): string {
  const path = join(ns, `${ID(n)}.sqlite`);
  writeFileSync(path, main);
  writeFileSync(`${path}-wal`, wal);
  writeFileSync(`${path}-shm`, new Uint8Array(32_768));
  const t = (Date.now() - ageMs) / 1000;
  for (const f of [path, `${path}-wal`, `${path}-shm`]) utimesSync(f, t, t);
  return path;
}

describe("the empty database rule", () => {
  it("the runtime's empty database is empty; one whose schema holds a table, or of two pages, is not", () => {
    expect(isEmptyDatabase(emptyDatabase())).toBe(true);
    expect(isEmptyDatabase(emptyDatabase(65_536).map((v, i) => (i === 16 ? 0 : i === 17 ? 1 : v)))).toBe(true);
    expect(isEmptyDatabase(databaseWithTable())).toBe(false);
    const two = new Uint8Array(8192);
    two.set(emptyDatabase());
    two[31] = 2;
    expect(isEmptyDatabase(two)).toBe(false);
    expect(isEmptyDatabase(emptyDatabase().subarray(0, 4095))).toBe(false);
  });

  it("fuzz: random bytes, and the empty database with any byte of its header or schema page changed, are never taken for empty unless that byte does not matter", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 5000 }), (bytes) => !isEmptyDatabase(bytes)));
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4095 }), fc.integer({ min: 1, max: 255 }), (at, delta) => {
        const b = emptyDatabase();
        b[at] = (b[at] + delta) & 0xff;
        const decisive = at < 18 || (at >= 28 && at < 32) || at === 100 || at === 103 || at === 104;
        return !decisive || !isEmptyDatabase(b);
      }),
    );
  });
});

describe("the sweep of empty databases", () => {
  it("removes the three files of every empty object database, and only those: one that holds a table, a WAL with frames, metadata.sqlite are kept", () => {
    const { dir, ns } = dataDir();
    for (let i = 0; i < 20; i++) object(ns, i, emptyDatabase());
    const kept = object(ns, 100, databaseWithTable());
    const walHeld = object(ns, 101, emptyDatabase(), new Uint8Array(4128));
    const r = sweepEmptyDatabases(dir, { minAgeMs: 0, runtimeRunning: false });
    expect(r.removed).toBe(20);
    expect(readdirSync(ns).sort()).toEqual(
      ["metadata.sqlite", ...[kept, walHeld].flatMap((p) => [p, `${p}-shm`, `${p}-wal`].map((f) => f.slice(ns.length + 1)))].sort(),
    );
  });

  it("never removes the files of a live object: one a process holds open stays, with its -wal and -shm", () => {
    const { dir, ns } = dataDir();
    const live = object(ns, 1, emptyDatabase());
    const idle = object(ns, 2, emptyDatabase());
    open.push(openSync(live, "r+"));
    const r = sweepEmptyDatabases(dir, { minAgeMs: 0, runtimeRunning: true });
    if (!existsSync("/proc/self/fd")) {
      expect(r.removed).toBe(0); // no way to tell a live object: nothing goes while it runs
      return;
    }
    expect(r).toEqual({ removed: 1, kept: 1 });
    for (const f of [live, `${live}-wal`, `${live}-shm`]) expect(existsSync(f)).toBe(true);
    expect(existsSync(idle)).toBe(false);
  });

  it("only files unchanged for the minimum age go", () => {
    const { dir, ns } = dataDir();
    const young = object(ns, 1, emptyDatabase(), new Uint8Array(), 1_000);
    object(ns, 2, emptyDatabase(), new Uint8Array(), 120_000);
    expect(sweepEmptyDatabases(dir, { minAgeMs: 60_000, runtimeRunning: false })).toEqual({ removed: 1, kept: 1 });
    expect(existsSync(young)).toBe(true);
  });

  it("files a stopped sweep left renamed aside are put back and judged again (a crash between rename and remove loses nothing)", () => {
    const { dir, ns } = dataDir();
    const withTable = join(ns, `${ID(7)}.sqlite`);
    writeFileSync(`${withTable}.sweeping`, databaseWithTable());
    writeFileSync(`${withTable}-wal.sweeping`, new Uint8Array());
    sweepEmptyDatabases(dir, { minAgeMs: 0, runtimeRunning: false });
    expect(existsSync(withTable)).toBe(true);
    expect(existsSync(`${withTable}-wal`)).toBe(true);
  });
});
