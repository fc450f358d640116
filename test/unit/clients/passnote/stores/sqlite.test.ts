import { mkdtempSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it, vi } from "vitest";
import { PassnotePeer } from "../../../../../clients/passnote/peer";
import { MemoryBus } from "../../../../../clients/passnote/memory-bus";
import { SqliteAdapter, SqliteStore } from "../../../../../clients/passnote/stores/sqlite";
import { base64urlEncode, bytesToHex, hexToBytes } from "../../../../../shared/encoding";
import { encodeValue } from "../../../../../clients/passnote/protocol/codec";
import { formatHlc } from "../../../../../clients/passnote/protocol/hlc";
import { foundGroup } from "../../../../../clients/passnote/protocol/roster";
import { adapterContract } from "../../../../helpers/passnote-adapter-contract";
import { waitFor } from "../../../../helpers/wait";

const dir = mkdtempSync(join(tmpdir(), "passnote-sqlite-"));
const wrappingKey = new Uint8Array(32).fill(9);
const path = (name: string) => join(dir, `${name}.db`);

function fileHolds(name: string, hex: string): boolean {
  const needles = [Buffer.from(hex, "hex"), Buffer.from(base64urlEncode(hexToBytes(hex)))];
  return [path(name), `${path(name)}-wal`].some((f) => existsSync(f) && needles.some((n) => readFileSync(f).includes(n)));
}

adapterContract("SQLite (node:sqlite)", () => ({
  persistent: true,
  open: async (name) => SqliteAdapter.open(path(name)),
  store: { keys: { wrappingKey } },
  rawContains: async (name, hex) => fileHolds(name, hex),
}));

describe("SQLite store: keys and the peer on reopen", () => {
  it("keys: the default keeps them as they are (Node has no key store); a wrong wrapping key does not open them", async () => {
    const plain = await SqliteStore.open(path("plain"));
    plain.saveKeys({ key: hexToBytes("ab".repeat(32)) });
    await plain.close();
    expect(fileHolds("plain", "ab".repeat(32))).toBe(true);
    const sealed = await SqliteStore.open(path("sealed"), { keys: { wrappingKey } });
    sealed.saveKeys({ key: hexToBytes("ab".repeat(32)) });
    await sealed.close();
    await expect(SqliteStore.open(path("sealed"), { keys: { wrappingKey: new Uint8Array(32) } })).rejects.toThrow(/wrong passphrase/);
  });

  it("the peer restores everything it needs on open: records, its keys, and a clock past every HLC it held", async () => {
    const identity = foundGroup();
    const bus = new MemoryBus();
    let now = 2_000_000_000_000;
    const p1 = new PassnotePeer({ transport: await bus.connect(), identity, store: await SqliteStore.open(path("peer")), now: () => now });
    const first = p1.put("notes", "n1", { text: "kept" });
    await p1.flushed();
    p1.close();
    await p1.store.close();
    now -= 60_000; // the wall clock went back a minute across the restart
    // No identity given: the database holds it.
    const p2 = new PassnotePeer({ transport: await bus.connect(), store: await SqliteStore.open(path("peer")), now: () => now });
    expect(p2.get("notes", "n1")).toEqual({ text: "kept" });
    expect(p2.engine.deviceId).toBe(p1.engine.deviceId);
    expect(p2.engine.isOwner).toBe(true);
    expect(p2.engine.inst).not.toBe(p1.engine.inst);
    const second = p2.put("notes", "n1", { text: "edited after the restart" });
    expect(second.hlc > first.hlc).toBe(true); // the edit wins, though the clock went back
    expect(p2.store.all("_roster")).toHaveLength(1);
    p2.close();
    await p2.store.close();
    // Another device's keys on this database are refused.
    await expect(
      SqliteStore.open(path("peer")).then(
        async (store) => new PassnotePeer({ transport: await bus.connect(), identity: foundGroup(), store }),
      ),
    ).rejects.toThrow(/another device's keys/);
    expect(bytesToHex(identity.deviceKey)).toHaveLength(64);
  });
});

describe("SQLite store: where node:sqlite is missing", () => {
  it("open() says what it needs (Node 20 has no node:sqlite)", async () => {
    const spy = vi.spyOn(process, "getBuiltinModule").mockImplementation(((name: string) => {
      if (name === "node:sqlite") throw new Error("No such built-in module: node:sqlite");
      return undefined;
    }) as typeof process.getBuiltinModule);
    try {
      await expect(SqliteStore.open(path("none"))).rejects.toThrow(/needs node:sqlite, built into Node 22\.13/);
    } finally {
      spy.mockRestore();
    }
  });
});

describe("SQLite store: two instances of one database, two peers", () => {
  it("inst: two processes (or tabs) on one database are two instances with their own tokens; they sync as peers and the database keeps every write", async () => {
    const identity = foundGroup();
    const bus = new MemoryBus();
    const first = new PassnotePeer({ transport: await bus.connect(), identity, store: await SqliteStore.open(path("shared")) });
    // The second instance opens the database the first one already wrote its keys to.
    await first.flushed();
    const second = new PassnotePeer({ transport: await bus.connect(), store: await SqliteStore.open(path("shared")) });
    expect(second.engine.inst).not.toBe(first.engine.inst);
    expect(second.engine.node).not.toBe(first.engine.node); // no two writes under one HLC
    first.put("notes", "from-first", 1);
    second.put("notes", "from-second", 2);
    await waitFor(() => first.get("notes", "from-second") === 2 && second.get("notes", "from-first") === 1, { what: "the instances sync" });
    for (const p of [first, second]) {
      p.close();
      await p.store.close();
    }
    const reopened = await SqliteStore.open(path("shared"));
    expect(
      reopened
        .all("notes")
        .map((r) => r.key)
        .sort(),
    ).toEqual(["from-first", "from-second"]);
    await reopened.close();
  });
});

describe("inst tokens and peers", () => {
  it("inst: a new peer on a store instance another peer already ran on is a restart to the others (a new token)", async () => {
    const bus = new MemoryBus();
    const store = await SqliteStore.open(path("rerun"));
    const key = new Uint8Array(32).fill(5);
    const first = new PassnotePeer({ transport: await bus.connect(), store, key });
    expect(first.engine.inst).toBe(store.inst);
    first.detach();
    const again = new PassnotePeer({ transport: first.transport, store });
    expect(again.engine.inst).not.toBe(first.engine.inst);
    again.close();
    await store.close();
  });
});

describe("SQLite store: the index in memory, not the database", () => {
  it("not the whole database in memory: opening reads the index (keys, HLCs, fingerprints) and a value is read from the file when it is needed", async () => {
    const name = path("index-only");
    const hlc = formatHlc({ wall: 1_700_000_000_000, counter: 0, node: "n1" });
    const s = await SqliteStore.open(name);
    s.merge("notes", { key: "a", value: { text: "as written" }, is_deleted: false, hlc });
    await s.close();
    const again = await SqliteStore.open(name);
    // The file's value changes behind the open store (same HLC, so its index is still right): the
    // store gives the file's, so it held no value of its own.
    const raw = new DatabaseSync(name);
    raw.prepare("UPDATE records SET value = ? WHERE key = 'a'").run(encodeValue({ text: "read from the file" }));
    raw.close();
    expect(again.get("notes", "a")?.value).toEqual({ text: "read from the file" });
    expect(again.all("notes").map((r) => r.value)).toEqual([{ text: "read from the file" }]);
    expect(again.watermark("notes")).toBe(hlc);
    expect(again.summary("notes").count).toBe(1);
    // A write goes to the file first and is read back from it.
    again.merge("notes", {
      key: "b",
      value: [1, 2],
      is_deleted: false,
      hlc: formatHlc({ wall: 1_700_000_000_001, counter: 0, node: "n1" }),
    });
    expect(again.get("notes", "b")?.value).toEqual([1, 2]);
    await again.close();
  });
});
