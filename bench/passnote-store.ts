// Reopening a Passnote database: the SQLite store (node:sqlite) with N records (default 100,000),
// written through the store one acknowledged merge at a time, closed, and opened again: the time to
// open (the index read: every record's key, HLC and fingerprint, not its value, which the store
// reads from the file when it is needed) and until the opened store can answer a sync (the
// fingerprint of the whole collection and recon2's ordering built), and the memory the open store
// adds. Not a timed test.
//
//   npx tsx bench/passnote-store.ts [records]     one run, printed
//   npm run bench                                  part of the full run (not of --smoke)
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteStore } from "../clients/passnote/stores/sqlite";
import { formatHlc } from "../shared/passnote/hlc";

export interface StoreReopenResult {
  records: number;
  /** milliseconds to write them, one committed merge each */
  writeMs: number;
  /** milliseconds for SqliteStore.open on the full database (its index read) */
  openMs: number;
  /** milliseconds from the start of open until a full-range summary and recon2's order are ready */
  readyMs: number;
  /** CPU milliseconds of this process for the same (less sensitive to a shared machine than wall time) */
  readyCpuMs: number;
  fileMB: number;
  /** MB the open store added to this process's heap and external memory (V8's own count), and to its resident set */
  openHeapMB: number;
  openRssMB: number;
}

/** Heap and external memory now, after a collection where the process allows one (node --expose-gc). */
function memoryMB(): { heap: number; rss: number } {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return { heap: (m.heapUsed + m.external + m.arrayBuffers) / 1e6, rss: m.rss / 1e6 };
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
    const before = memoryMB();
    const t1 = performance.now();
    const cpu = process.cpuUsage();
    const again = await SqliteStore.open(path);
    const openMs = performance.now() - t1;
    again.summary("notes");
    again.ordered("notes");
    const readyMs = performance.now() - t1;
    const used = process.cpuUsage(cpu);
    const after = memoryMB();
    if (again.size("notes") !== records) throw new Error(`reopened ${again.size("notes")} of ${records}`);
    await again.close();
    return {
      records,
      writeMs: Math.round(writeMs),
      openMs: Math.round(openMs),
      readyMs: Math.round(readyMs),
      readyCpuMs: Math.round((used.user + used.system) / 1000),
      fileMB: Math.round(statSync(path).size / 1e5) / 10,
      openHeapMB: Math.round(after.heap - before.heap),
      openRssMB: Math.round(after.rss - before.rss),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function storeReopenTable(r: StoreReopenResult): string {
  return [
    "| Passnote SQLite store | value |",
    "|---|---|",
    `| records | ${r.records.toLocaleString("en")} |`,
    `| write, one committed merge each | ${r.writeMs} ms |`,
    `| reopen (read the index: keys, HLCs, fingerprints) | ${r.openMs} ms |`,
    `| reopen until it can answer a sync | ${r.readyMs} ms (CPU ${r.readyCpuMs} ms) |`,
    `| database file | ${r.fileMB} MB |`,
    `| memory the open store adds (heap and external; resident) | ${r.openHeapMB} MB; ${r.openRssMB} MB |`,
  ].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const n = Number(process.argv[2] ?? 100_000);
  storeReopen(n).then((r) => console.log(storeReopenTable(r)));
}
