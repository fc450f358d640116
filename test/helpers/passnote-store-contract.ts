// One contract every Passnote store runs (memory, SQLite in Node, IndexedDB in Chromium): the
// automerge-repo lesson, as for the transports. A harness opens instances of a named database
// and drives them through plain async calls, so a store living in a browser page runs the same
// suite through page.evaluate. Keys and byte values cross as hex.
import { describe, expect, it } from "vitest";
import { formatHlc } from "../../clients/passnote/protocol/hlc";
import type { WireRecord } from "../../clients/passnote/protocol/wire";

export interface StoreDump {
  /** collection -> records sorted by key */
  records: Record<string, WireRecord[]>;
  watermarks: Record<string, string>;
  clock: string;
  /** hex of the keys as the store gives them back (deviceKey ‖ rosterKey ‖ groupKey ‖ owner, or the passphrase key) */
  keys: string | null;
}

export interface StoreInstance {
  inst(): Promise<string>;
  /** Merges records in order; what each merge returned. */
  merge(collection: string, records: WireRecord[]): Promise<boolean[]>;
  /** Keeps keys: identity mode (four 32-byte hex values) or a passphrase key (one). */
  saveKeys(keys: { deviceKey: string; rosterKey: string; groupKey: string; owner: string } | { key: string }): Promise<void>;
  flushed(): Promise<void>;
  dump(): Promise<StoreDump>;
  close(): Promise<void>;
}

export interface StoreHarness {
  /** Whether a database outlives its instances (false: the memory store; the reopen cases are skipped). */
  persistent: boolean;
  /** Opens a new instance of database `name`. */
  open(name: string): Promise<StoreInstance>;
  /** Whether the database's raw bytes (files, IndexedDB values) contain these bytes (hex), raw or in base64url. */
  rawContains?(name: string, hex: string): Promise<boolean>;
}

const hlc = (wall: number, counter = 0, node = "n1") => formatHlc({ wall, counter, node });
const rec = (key: string, value: WireRecord["value"], h: string, extra: Partial<WireRecord> = {}): WireRecord => ({
  key,
  value,
  is_deleted: false,
  hlc: h,
  ...extra,
});
const hex = (byte: number) => byte.toString(16).padStart(2, "0").repeat(32);
let dbCounter = 0;

export function storeContract(name: string, make: () => StoreHarness): void {
  describe(`Passnote store contract: ${name}`, () => {
    const db = () => `contract-${name}-${process.pid}-${Date.now()}-${dbCounter++}`;

    it("a write is atomic per document: a record is stored whole, last-writer-wins by HLC, never a mix of two versions", async () => {
      const h = make();
      const s = await h.open(db());
      const v1 = rec("doc", { title: "first", tags: ["a", "b"], n: 1 }, hlc(1_000));
      const v2 = rec("doc", { body: "second", n: 2.5 }, hlc(2_000), { crdt_type: "lww-map" });
      const old = rec("doc", { title: "stale" }, hlc(1_500));
      expect(await s.merge("notes", [v1, v2, old, v2])).toEqual([true, true, false, false]);
      const d = await s.dump();
      expect(d.records.notes).toEqual([v2]);
      expect(d.watermarks.notes).toBe(v2.hlc);
      await s.close();
    });

    it("each open instance mints its own inst token (16 hex), a reopened one a new one", async () => {
      const h = make();
      const name = db();
      const a = await h.open(name);
      const b = await h.open(name);
      const [ia, ib] = [await a.inst(), await b.inst()];
      expect(ia).toMatch(/^[0-9a-f]{16}$/);
      expect(ib).toMatch(/^[0-9a-f]{16}$/);
      expect(ia).not.toBe(ib);
      await a.close();
      const c = await h.open(name);
      expect([ia, ib]).not.toContain(await c.inst());
      await b.close();
      await c.close();
    });

    it.runIf(make().persistent)("reopen restores records, watermarks, the roster, the HLC and the keys", async () => {
      const h = make();
      const name = db();
      const s = await h.open(name);
      await s.merge("notes", [
        rec("a", "x", hlc(5_000)),
        rec("b", null, hlc(6_000, 3, "n2"), { is_deleted: true }),
        rec("c", { deep: [[1, [2, { k: true }]]] }, hlc(4_000)),
      ]);
      await s.merge("diary", [rec("d", -7, hlc(9_000, 1))]);
      await s.merge("_roster", [rec("dev1", { pub: "p", revoked: false, sig: "s" }, hlc(3_000))]);
      await s.saveKeys({ deviceKey: hex(1), rosterKey: hex(2), groupKey: hex(3), owner: hex(4) });
      await s.flushed();
      const before = await s.dump();
      await s.close();
      const again = await h.open(name);
      const after = await again.dump();
      expect(after).toEqual(before);
      expect(after.watermarks).toEqual({ notes: hlc(6_000, 3, "n2"), diary: hlc(9_000, 1), _roster: hlc(3_000) });
      expect(after.clock).toBe(hlc(9_000, 1));
      expect(after.keys).toBe(hex(1) + hex(2) + hex(3) + hex(4));
      expect(after.records._roster).toHaveLength(1);
      await again.close();
    });

    it.runIf(make().persistent)(
      "two instances on one database do not lose each other's writes (the greater HLC wins in the database)",
      async () => {
        const h = make();
        const name = db();
        const a = await h.open(name);
        const b = await h.open(name);
        await a.merge("notes", [rec("only-a", 1, hlc(1_000, 0, "a")), rec("shared", "a wins", hlc(3_000, 0, "a"))]);
        await a.flushed();
        // b never saw a's write (its index was loaded before): its older write to the same document
        // comes later in time and must not replace a's.
        await b.merge("notes", [rec("only-b", 2, hlc(1_000, 0, "b")), rec("shared", "b loses", hlc(2_000, 0, "b"))]);
        await b.flushed();
        await a.close();
        await b.close();
        const c = await h.open(name);
        const d = await c.dump();
        expect(d.records.notes.map((r) => [r.key, r.value])).toEqual([
          ["only-a", 1],
          ["only-b", 2],
          ["shared", "a wins"],
        ]);
        await c.close();
      },
    );

    it.runIf(make().persistent)("a write the database cannot take is never acknowledged: merge throws or flushed() rejects", async () => {
      const h = make();
      const s = await h.open(db());
      await s.close();
      const outcome = await s
        .merge("notes", [rec("late", 1, hlc(1_000))])
        .then(() => s.flushed())
        .then(
          () => "acknowledged",
          () => "refused",
        );
      expect(outcome).toBe("refused");
    });

    it.runIf(!!make().rawContains)("the device keys are not in the database in the clear", async () => {
      const h = make();
      const name = db();
      const s = await h.open(name);
      const deviceKey = "c0ffee".repeat(10) + "c0ff";
      await s.saveKeys({ deviceKey, rosterKey: hex(2), groupKey: hex(3), owner: hex(4) });
      await s.flushed();
      await s.close();
      expect(await h.rawContains!(name, deviceKey)).toBe(false);
      const again = await h.open(name);
      expect((await again.dump()).keys?.slice(0, 64)).toBe(deviceKey);
      await again.close();
    });
  });
}
