// The StoreInstance face of a PassnoteStore (test/helpers/passnote-store-contract.ts): used
// directly in Node, and bundled into a Chromium page for the IndexedDB store.
import { bytesToHex, hexToBytes } from "../../shared/encoding";
import type { PassnoteStore } from "../../clients/passnote/protocol/records";
import type { WireRecord } from "../../clients/passnote/protocol/wire";
import type { StoreDump, StoreInstance } from "./passnote-store-contract";

export async function dumpStore(s: PassnoteStore): Promise<StoreDump> {
  const records: Record<string, WireRecord[]> = {};
  const watermarks: Record<string, string> = {};
  for (const c of s.collectionNames().sort()) {
    // read(): the way every store gives its values (some read them asynchronously).
    const held = await s.read(
      c,
      s.ordered(c).map((e) => e.key),
    );
    records[c] = [...held].sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0));
    watermarks[c] = s.watermark(c);
  }
  const k = s.keys();
  const keys = !k
    ? null
    : "key" in k
      ? bytesToHex(k.key)
      : [k.identity.deviceKey, k.identity.group.rosterKey, k.identity.group.groupKey, k.identity.group.owner].map(bytesToHex).join("");
  return { records, watermarks, clock: s.clock(), keys };
}

export function instanceOf(s: PassnoteStore): StoreInstance {
  return {
    inst: async () => s.inst,
    merge: async (collection, records) => records.map((r) => s.merge(collection, r)),
    saveKeys: async (k) =>
      s.saveKeys(
        "key" in k
          ? { key: hexToBytes(k.key) }
          : {
              identity: {
                deviceKey: hexToBytes(k.deviceKey),
                group: { rosterKey: hexToBytes(k.rosterKey), groupKey: hexToBytes(k.groupKey), owner: hexToBytes(k.owner) },
              },
            },
      ),
    flushed: () => s.flushed(),
    dump: () => dumpStore(s),
    close: () => s.close(),
  };
}
