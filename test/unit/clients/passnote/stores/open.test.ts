// Opening a database store: what it reads. The time it takes is measured in bench/passnote-store.ts
// (never asserted here); what these tests hold is why it is fast: the index comes in columns, one
// statement for the database, with no record value and nothing hashed, and what comes in that
// form is exactly what was stored.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { toRow, type StorageAdapter } from "../../../../../clients/passnote/stores/adapter";
import { openStore } from "../../../../../clients/passnote/stores/adapter-store";
import { SqliteAdapter, SqliteStore } from "../../../../../clients/passnote/stores/sqlite";
import { isWellFormedUnicode } from "../../../../../shared/encoding";
import { formatHlc } from "../../../../../clients/passnote/protocol/hlc";
import { recordFingerprint } from "../../../../../clients/passnote/protocol/records";

const dir = mkdtempSync(join(tmpdir(), "passnote-open-"));
const path = (name: string) => join(dir, `${name}.db`);
const hlc = (i: number) => formatHlc({ wall: 1_700_000_000_000 + (i % 50), counter: i % 3, node: "n1" });

/** Keys of any text, and the ones JSON and C strings treat specially. */
const anyKey = fc.oneof(
  fc.string({ unit: "grapheme", maxLength: 12 }),
  fc.string({ unit: "binary", maxLength: 6 }).filter(isWellFormedUnicode),
  fc.constantFrom("\u0000", "a\u0000b", '"', "\\", "\n", "\u2028", "\u{1F642}", "[1]", "null"),
);

/** The adapter with every call counted by method name. */
function counted(a: StorageAdapter): { adapter: StorageAdapter; calls: Map<string, number> } {
  const calls = new Map<string, number>();
  const adapter = new Proxy(a, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== "function") return v;
      return (...args: unknown[]) => {
        calls.set(String(prop), (calls.get(String(prop)) ?? 0) + 1);
        return v.apply(target, args);
      };
    },
  });
  return { adapter, calls };
}

describe("opening a SQLite store", () => {
  it("opening reads the index in columns, one statement for the database: no record value and no row one by one", async () => {
    const name = path("columns");
    const s = await SqliteStore.open(name);
    for (let i = 0; i < 200; i++) s.merge(i % 2 ? "notes" : "todo", { key: `k${i}`, value: { i }, is_deleted: false, hlc: hlc(i) });
    await s.close();
    const { adapter, calls } = counted(SqliteAdapter.open(name));
    const again = await openStore(adapter);
    expect(Object.fromEntries(calls)).toEqual({ loadHeads: 1, loadMeta: 1 });
    expect(again.size("notes") + again.size("todo")).toBe(200);
    expect(again.get("notes", "k1")?.value).toEqual({ i: 1 }); // read now, from the file
    expect(calls.get("loadSync")).toBe(1);
    await again.close();
  });

  it("opening hashes nothing: each record's fingerprint is the one kept beside it (one not whole in the file is computed)", async () => {
    const name = path("kept-fp");
    const s = await SqliteStore.open(name);
    s.merge("notes", { key: "a", value: 1, is_deleted: false, hlc: hlc(1) });
    s.merge("notes", { key: "b", value: 2, is_deleted: false, hlc: hlc(2) });
    s.merge("other", { key: "c", value: 3, is_deleted: false, hlc: hlc(3) });
    await s.close();
    // Behind the SDK: a's kept fingerprint is not its hash, and c's is cut short.
    const raw = new DatabaseSync(name);
    raw.prepare("UPDATE records SET fp = ? WHERE key = 'a'").run(new Uint8Array(16).fill(0x5a));
    raw.prepare("UPDATE records SET fp = ? WHERE key = 'c'").run(new Uint8Array(3));
    raw.close();
    const again = await SqliteStore.open(name);
    const xor = recordFingerprint("b", hlc(2)).map((x) => x ^ 0x5a);
    expect(again.summary("notes").fingerprint).toEqual(xor); // a's taken as kept, not hashed
    expect(again.summary("other").fingerprint).toEqual(recordFingerprint("c", hlc(3)));
    await again.close();
  });

  it("what the columns bring back is what was stored: every key (any text), HLC and fingerprint, each with its own record (fuzzed)", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.record({ key: anyKey, fp: fc.uint8Array({ minLength: 16, maxLength: 16 }) }), {
          selector: (r) => r.key,
          maxLength: 40,
        }),
        async (rows) => {
          const a = SqliteAdapter.open(path(`fuzz-${run++}`));
          rows.forEach((r, i) => {
            a.save(toRow("c", { key: r.key, value: i, is_deleted: false, hlc: hlc(i) }, r.fp));
          });
          const store = await openStore(a);
          expect(store.size("c")).toBe(rows.length);
          const byKey = new Map(store.ordered("c").map((e) => [e.key, e]));
          rows.forEach((r, i) => {
            expect(byKey.get(r.key)?.hlc).toBe(hlc(i));
            expect(byKey.get(r.key)?.fp).toEqual(r.fp);
            expect(store.get("c", r.key)?.value).toBe(i);
          });
          await store.close();
        },
      ),
      { numRuns: 60, seed: 42 },
    );
  });
});
