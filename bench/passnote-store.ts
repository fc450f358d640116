// Reopening a Passnote database: the SQLite store (node:sqlite) with N records (default 100,000),
// written through the store one acknowledged merge at a time, closed, and opened again, two ways
// in one run, each three times in turn (the median is reported):
//   - rows: the index read row by row (adapter.loadAll, one row object per record: the open
//     before the index came in columns), kept as the reference;
//   - columns: the store as it opens now (adapter.loadHeads: each collection's keys, HLCs and
//     fingerprints in one aggregate statement).
// Each is timed until the opened store can answer a sync (the fingerprint of the whole collection
// and recon2's ordering built), with the CPU time and the memory the open store adds. Not a
// timed test.
//
//   node --expose-gc --import tsx bench/passnote-store.ts [records]     one run, printed
//   npm run bench                                                       part of the full run (not of --smoke)
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StorageAdapter } from "../clients/passnote/stores/adapter";
import { openStore, type AdapterStore } from "../clients/passnote/stores/adapter-store";
import { SqliteAdapter, SqliteStore } from "../clients/passnote/stores/sqlite";
import { formatHlc } from "../clients/passnote/protocol/hlc";
import { median } from "./figures";

/** One way of opening, measured (medians of the rounds). */
export interface OpenFigures {
  /** milliseconds from the start of open until a full-range summary and recon2's order are ready */
  readyMs: number;
  /** CPU milliseconds of this process for the same (less sensitive to a shared machine than wall time) */
  readyCpuMs: number;
  /**
   * MB the open store added to this process's heap and external memory (V8's own count; the
   * resident set is not reported: after the first round it holds what earlier rounds freed)
   */
  heapMB: number;
}

export interface StoreReopenResult {
  records: number;
  /** milliseconds to write them, one committed merge each */
  writeMs: number;
  fileMB: number;
  /** the index read row by row (the open before columns) */
  rows: OpenFigures;
  /** the store's open: the index in columns */
  columns: OpenFigures;
}

/** Heap and external memory now, after a collection where the process allows one (node --expose-gc). */
function memoryMB(): number {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return (m.heapUsed + m.external + m.arrayBuffers) / 1e6;
}

/** The SQLite adapter without loadHeads: the store reads its index row by row (loadAll without values). */
function rowByRow(a: SqliteAdapter): StorageAdapter {
  return {
    loadAll: (o) => a.loadAll(o),
    loadSync: (c, k) => a.loadSync(c, k),
    save: (r) => a.save(r),
    loadMeta: (n) => a.loadMeta(n),
    saveMeta: (n, v) => a.saveMeta(n, v),
    close: () => a.close(),
  };
}

async function openOnce(path: string, records: number, how: "rows" | "columns"): Promise<OpenFigures> {
  const before = memoryMB();
  const t = performance.now();
  const cpu = process.cpuUsage();
  const store: AdapterStore = how === "columns" ? await SqliteStore.open(path) : await openStore(rowByRow(SqliteAdapter.open(path)));
  store.summary("notes");
  store.ordered("notes");
  const readyMs = performance.now() - t;
  const used = process.cpuUsage(cpu);
  const after = memoryMB();
  if (store.size("notes") !== records) throw new Error(`reopened ${store.size("notes")} of ${records}`);
  await store.close();
  return {
    readyMs,
    readyCpuMs: (used.user + used.system) / 1000,
    heapMB: after - before,
  };
}

function medians(runs: OpenFigures[]): OpenFigures {
  const pick = (k: keyof OpenFigures) => Math.round(median(runs.map((r) => r[k])));
  return { readyMs: pick("readyMs"), readyCpuMs: pick("readyCpuMs"), heapMB: pick("heapMB") };
}

export async function storeReopen(records = 100_000): Promise<StoreReopenResult> {
  const dir = mkdtempSync(join(tmpdir(), "passnote-bench-"));
  const path = join(dir, "bench.db");
  try {
    const store = await SqliteStore.open(path);
    const day = 86_400_000;
    const t0 = performance.now();
    for (let i = 0; i < records; i++) {
      // a month of notes, a few fields each
      const hlc = formatHlc({ wall: 1_700_000_000_000 + Math.floor((i / records) * 30 * day), counter: i % 7, node: "bench" });
      store.merge("notes", {
        key: `note-${i}`,
        value: { title: `note ${i}`, body: "lorem ipsum ".repeat(8), tags: ["a", "b"], n: i },
        is_deleted: false,
        hlc,
      });
    }
    await store.flushed();
    const writeMs = performance.now() - t0;
    await store.close();
    const runs = { rows: [] as OpenFigures[], columns: [] as OpenFigures[] };
    for (let round = 0; round < 3; round++) {
      runs.rows.push(await openOnce(path, records, "rows"));
      runs.columns.push(await openOnce(path, records, "columns"));
    }
    return {
      records,
      writeMs: Math.round(writeMs),
      fileMB: Math.round(statSync(path).size / 1e5) / 10,
      rows: medians(runs.rows),
      columns: medians(runs.columns),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function storeReopenTable(r: StoreReopenResult): string {
  const ratio = (x: number, y: number) => (y ? (x / y).toFixed(2) : "-");
  const row = (what: string, k: keyof OpenFigures, unit: string) =>
    `| ${what} | ${r.rows[k].toLocaleString("en")} ${unit} | ${r.columns[k].toLocaleString("en")} ${unit} | ${ratio(r.columns[k], r.rows[k])} |`;
  return [
    `Passnote SQLite store: ${r.records.toLocaleString("en")} records, ${r.fileMB} MB file, written in ${r.writeMs} ms (one committed merge each)`,
    "",
    "| reopen until it can answer a sync (median of 3) | rows (before) | columns (now) | columns ÷ rows |",
    "|---|---|---|---|",
    row("CPU", "readyCpuMs", "ms"),
    row("wall", "readyMs", "ms"),
    row("memory the open store adds (heap and external)", "heapMB", "MB"),
  ].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const n = Number(process.argv[2] ?? 100_000);
  storeReopen(n).then((r) => console.log(storeReopenTable(r)));
}
