// One contract every Passnote storage adapter runs (SQLite, in-memory, an app's own): the
// automerge-repo lesson, as for the transports. First the adapter's own five methods, then the
// whole store contract (passnote-store-contract.ts) over the SDK's layer on it (openStore).
import { describe, expect, it } from "vitest";
import type { RecordRow, StorageAdapter } from "../../clients/passnote/stores/adapter";
import { openStore, type AdapterStoreOptions } from "../../clients/passnote/stores/adapter-store";
import { formatHlc } from "../../clients/passnote/protocol/hlc";
import { storeContract } from "./passnote-store-contract";
import { instanceOf } from "./passnote-store-harness";
import { valuesStayInTheDatabase } from "./passnote-values-on-demand";

export interface AdapterHarness {
  /** Whether a database outlives its adapters (a new adapter on the same name sees what an earlier one saved). */
  persistent: boolean;
  /** A new adapter on database `name`. */
  open(name: string): Promise<StorageAdapter>;
  /** How the store over it keeps the keys (the raw-bytes case needs them sealed). */
  store?: AdapterStoreOptions;
  rawContains?(name: string, hex: string): Promise<boolean>;
}

const hlc = (wall: number, node = "n1") => formatHlc({ wall, counter: 0, node });
const row = (key: string, h: string, byte: number, extra: Partial<RecordRow> = {}): RecordRow => ({
  collection: "notes",
  key,
  hlc: h,
  deleted: 0,
  crdt_type: null,
  value: new Uint8Array([0x01, byte]),
  fp: new Uint8Array(16).fill(byte),
  ...extra,
});
let counter = 0;

async function rows(a: StorageAdapter): Promise<RecordRow[]> {
  const all = await a.loadAll();
  const out: RecordRow[] = [];
  if (Symbol.iterator in all) out.push(...all);
  else for await (const r of all) out.push(r);
  return out.map((r) => ({ ...r, value: new Uint8Array(r.value), fp: new Uint8Array(r.fp) })).sort((x, y) => (x.key < y.key ? -1 : 1));
}

export function adapterContract(name: string, make: () => AdapterHarness): void {
  describe(`Passnote storage adapter contract: ${name}`, () => {
    const db = () => `adapter-${name.replace(/\W+/g, "-")}-${process.pid}-${Date.now()}-${counter++}`;

    it("save keeps a record whole and last-writer-wins by HLC: an older or equal version never replaces it", async () => {
      const a = await make().open(db());
      await a.save(row("doc", hlc(2_000), 2, { crdt_type: "lww-map" }));
      await a.save(row("doc", hlc(1_000), 1));
      await a.save(row("doc", hlc(2_000), 9)); // equal HLC: no change
      await a.save(row("gone", hlc(3_000), 3, { deleted: 1 }));
      expect(await rows(a)).toEqual([row("doc", hlc(2_000), 2, { crdt_type: "lww-map" }), row("gone", hlc(3_000), 3, { deleted: 1 })]);
      await a.save(row("doc", hlc(4_000), 4));
      expect((await rows(a))[0]).toEqual(row("doc", hlc(4_000), 4));
      await a.close();
    });

    it("loadMeta gives back what saveMeta kept (the last value), and nothing for a name never saved", async () => {
      const a = await make().open(db());
      expect(await a.loadMeta("keys")).toBeUndefined();
      await a.saveMeta("keys", new Uint8Array([1, 2, 3]));
      await a.saveMeta("keys", new Uint8Array([4, 5]));
      expect(new Uint8Array((await a.loadMeta("keys"))!)).toEqual(new Uint8Array([4, 5]));
      await a.close();
    });

    it.runIf(make().persistent)(
      "what a save resolved is in the next adapter on the database, and a destroyed database is empty",
      async () => {
        const h = make();
        const name = db();
        const a = await h.open(name);
        await a.save(row("kept", hlc(1_000), 7));
        await a.saveMeta("keys", new Uint8Array([8]));
        await a.close();
        const b = await h.open(name);
        expect(await rows(b)).toEqual([row("kept", hlc(1_000), 7)]);
        expect(new Uint8Array((await b.loadMeta("keys"))!)).toEqual(new Uint8Array([8]));
        if (!b.destroy) return void (await b.close());
        await b.close();
        await b.destroy();
        const c = await h.open(name);
        expect(await rows(c)).toEqual([]);
        await c.close();
      },
    );

    it.runIf(make().persistent)(
      "values stay in the database: after open the store holds no value in memory, and a peer on it still syncs every record to another peer",
      async () => {
        const h = make();
        const name = db();
        const out = await valuesStayInTheDatabase(async () => openStore(await h.open(name), h.store));
        expect(out).toEqual({
          written: 300,
          heldAfterOpen: 0,
          heldAfterSync: 0, // what was read to ship it was not kept
          synced: 300,
          readByOther: { i: 1, text: "note 1" },
          readBack: { i: 0, text: "note 0" },
        });
      },
    );

    storeContract(`${name}, through the SDK's store`, () => {
      const h = make();
      return {
        persistent: h.persistent,
        open: async (n) => instanceOf(await openStore(await h.open(n), h.store)),
        rawContains: h.rawContains,
      };
    });
  });
}
