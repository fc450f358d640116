// data: strings round-trip exactly (a leading U+FEFF survives; lone surrogates are
// refused at write time), local writes are checked against the decoder's bounds, and a record
// that could not travel in one relay message is refused at the API, never sent.
import { describe, expect, it } from "vitest";
import { MemoryBus } from "../../../../clients/passnote/memory-bus";
import { PassnotePeer, WriteRefusedError } from "../../../../clients/passnote";
import { Writer } from "../../../../clients/passnote/protocol/codec";
import { encodeRecord } from "../../../../clients/passnote/protocol/wire";
import { PASSNOTE_LIMITS as L } from "../../../../shared/limits";
import { groupKey, tapSends } from "../../../helpers/passnote";
import { waitFor } from "../../../helpers/wait";

async function pair() {
  const bus = new MemoryBus();
  const key = groupKey();
  const ta = await bus.connect();
  const sentA = tapSends(ta);
  const a = new PassnotePeer({ transport: ta, key, node: "alice" });
  const tb = await bus.connect();
  const b = new PassnotePeer({ transport: tb, key, node: "bob" });
  await waitFor(() => a.engine.agreedPeers().length === 1 && b.engine.agreedPeers().length === 1, { what: "agreement" });
  return { a, b, sentA };
}

function refusal(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(WriteRefusedError);
    return (e as WriteRefusedError).bound;
  }
  return undefined;
}

describe("strings round-trip exactly", () => {
  it('a leading U+FEFF survives: "\\uFEFFk" and "k" stay two records, in keys, collections and values', async () => {
    const { a, b } = await pair();
    a.put("notes", "k", "plain");
    a.put("notes", "\uFEFFk", "\uFEFFwith mark");
    a.put("\uFEFFnotes", "k", "other collection");
    await waitFor(() => b.store.size("notes") === 2 && b.store.size("\uFEFFnotes") === 1, { what: "records arrive" });
    expect(b.get("notes", "k")).toBe("plain");
    expect(b.get("notes", "\uFEFFk")).toBe("\uFEFFwith mark");
    expect(b.get("\uFEFFnotes", "k")).toBe("other collection");
    expect(b.store.collectionNames().sort()).toEqual(["notes", "\uFEFFnotes"].sort());
  });

  it("lone surrogates are refused at write time, not turned into U+FFFD: nothing is stored", async () => {
    const { a } = await pair();
    expect(refusal(() => a.put("notes", "\uD800", "x"))).toBe("unicode");
    expect(refusal(() => a.put("no\uDC00tes", "k", "x"))).toBe("unicode");
    expect(refusal(() => a.put("notes", "k", "a\uD83D"))).toBe("value");
    expect(refusal(() => a.put("notes", "k", { ["\uDE00"]: 1 }))).toBe("value");
    expect(refusal(() => a.engine.put("notes", "k", 1, "lww\uD800"))).toBe("unicode");
    expect(a.store.collectionNames()).toEqual([]);
    a.put("notes", "k", "\uD83D\uDE00"); // a surrogate pair is fine
    expect(a.get("notes", "k")).toBe("😀");
  });
});

describe("local writes are checked against the decoder's bounds", () => {
  it("a key, collection or crdt type over 1,024 bytes is refused at the API; 1,024 bytes travels", async () => {
    const { a, b } = await pair();
    const long = "é".repeat(513); // 1,026 bytes of UTF-8 in 513 code units
    expect(refusal(() => a.put("notes", long, 1))).toBe("max_name_bytes");
    expect(refusal(() => a.put(long, "k", 1))).toBe("max_name_bytes");
    expect(refusal(() => a.engine.put("notes", "k", 1, long))).toBe("max_name_bytes");
    expect(refusal(() => a.delete("notes", long))).toBe("max_name_bytes");
    expect(() => a.put("notes", "k", 1)).not.toThrow();
    const edge = "é".repeat(512);
    a.engine.put(edge, edge, "fits", edge);
    await waitFor(() => b.get(edge, edge) === "fits", { what: "a 1,024-byte key, collection and crdt type arrive" });
    expect(b.store.get(edge, edge)?.crdt_type).toBe(edge);
    expect(b.get("notes", "k")).toBe(1);
  });

  it("a record that cannot fit one relay message is refused (record_max_bytes); the largest that fits travels in one message under 1 MiB", async () => {
    const { a, b, sentA } = await pair();
    const hlc = a.engine.clock.tick();
    const sizeWith = (n: number) =>
      encodeRecord(new Writer(), { key: "big", value: "x".repeat(n), is_deleted: false, hlc }).finish().length;
    const n = L.record_max_bytes - (sizeWith(0) + 2); // the value's length varint grows by 2 bytes at this size
    expect(sizeWith(n)).toBe(L.record_max_bytes);
    expect(refusal(() => a.put("blobs", "big", "x".repeat(n + 1)))).toBe("record_max_bytes");
    expect(a.store.size("blobs")).toBe(0);
    a.put("blobs", "big", "x".repeat(n));
    await waitFor(() => b.store.size("blobs") === 1, { what: "the largest record arrives" });
    const largest = Math.max(...sentA.map(([, f]) => f.length));
    expect(largest + 8).toBeLessThanOrEqual(L.max_binary_bytes); // with the relay's 8-byte peer id
    expect(largest).toBeGreaterThan(L.record_max_bytes);
  });
});
