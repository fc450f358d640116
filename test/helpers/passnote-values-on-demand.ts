// Values stay in the database: a store whose adapter reads values back (loadSync, or load for an
// asynchronous one) holds only its index once open, and a peer on it still ships every record to
// another peer, reading each through the store. Run by the adapter contract in Node and, bundled,
// by the IndexedDB tests in Chromium; the caller asserts on what it returns.
import { MemoryBus } from "../../clients/passnote/memory-bus";
import { PassnotePeer } from "../../clients/passnote/peer";
import type { PassnoteStore } from "../../clients/passnote/protocol/records";
import { ROSTER_COLLECTION } from "../../clients/passnote/protocol/roster";
import { settle } from "./passnote-settle";

export interface OnDemandOutcome {
  /** Records written before the reopen. */
  written: number;
  /** User records whose value the reopened store held in memory: right after open, and after syncing. */
  heldAfterOpen: number;
  heldAfterSync: number;
  /** Records the other peer holds once settled, and one value each side reads back. */
  synced: number;
  readByOther: unknown;
  readBack: unknown;
}

const held = (s: PassnoteStore) =>
  s
    .collectionNames()
    .filter((c) => c !== ROSTER_COLLECTION)
    .reduce((n, c) => n + s.ordered(c).filter((e) => e.record !== undefined).length, 0);

export async function valuesStayInTheDatabase(open: () => Promise<PassnoteStore>, written = 300): Promise<OnDemandOutcome> {
  const key = new Uint8Array(32).fill(3);
  const bus = new MemoryBus();
  const writer = new PassnotePeer({ transport: await bus.connect(), store: await open(), key, antiEntropyIntervalMs: 0 });
  for (let i = 0; i < written; i++) writer.put(i % 3 ? "notes" : "todo", `k${i}`, { i, text: `note ${i}` });
  await writer.close(); // flushed, then the store closed
  const store = await open();
  const heldAfterOpen = held(store);
  const a = new PassnotePeer({ transport: await bus.connect(), store, antiEntropyIntervalMs: 0 });
  const b = new PassnotePeer({ transport: await bus.connect(), key, antiEntropyIntervalMs: 0 });
  await settle([a, b]);
  const out = {
    written,
    heldAfterOpen,
    heldAfterSync: held(store),
    synced: b.store.size("notes") + b.store.size("todo"),
    readByOther: b.get("notes", "k1"),
    readBack: await a.read("todo", "k0"),
  };
  await a.close();
  await b.close();
  return out;
}
