// What a store slot left behind is taken over by whichever client runs (store-slots.ts holds the
// slots). A message sent from a second tab or process stays in that slot's outbox; when no client
// holds the slot any more, the next client of the user, whatever slot it got, moves the slot's
// outbox, processed set, ignored marks and ledger into its own store and sends the outbox. So no
// message waits for its slot to be opened again, and what one slot processed is not handled again
// by another. A slot a live client holds is left alone: that client sends its own outbox.
//
// Decision (crash-safe): every key is copied first, and only then is the source emptied; a crash
// between the two copies it again next time (outbox items keep their id and bytes, the recipient
// dedups; a processed record with a result wins over one without).
import { FileKeyValue } from "../node/file-key-value";
import { IndexedDbKeyValue } from "./indexeddb";
import type { KeyValue } from "./store";
import {
  MAX_STORE_SLOTS,
  browserStoreName,
  heldHere,
  nodeStorePath,
  takeLock,
  type LockManagerLike,
  type NodeProcess,
} from "./store-slots";

/** Copies every key of `from` into `into` that `into` lacks (a processed record with a result replaces one without); how many keys it read. */
async function copyInto(from: KeyValue, into: KeyValue): Promise<number> {
  const keys = await from.keys("");
  let ledger = false;
  for (const key of keys) {
    if (key.startsWith("history")) continue; // the time index is rebuilt from the ledger (below)
    ledger ||= key.startsWith("ledger/");
    const v = await from.get(key);
    if (v === undefined) continue;
    const mine = await into.get(key);
    const better = key.startsWith("processed/") && mine !== undefined && !mine.startsWith("{") && v.startsWith("{");
    if (mine === undefined || better) await into.set(key, v);
  }
  if (ledger) await into.delete("history-index/v1"); // entries came without their index: rebuilt when next asked
  return keys.length;
}

type Fs = typeof import("node:fs");

/** Node: moves every free slot's store (but `own`) into `into`; how many slots it emptied. */
export async function adoptNodeSlots(fs: Fs, proc: NodeProcess, dir: string, npub: string, own: number, into: KeyValue): Promise<number> {
  let n = 0;
  for (let index = 0; index < MAX_STORE_SLOTS; index++) {
    const path = nodeStorePath(dir, npub, index);
    if (index === own || !fs.existsSync(path)) continue;
    const lock = `${path}.lock`;
    if (heldHere.has(lock) || !takeLock(fs, proc, lock)) continue; // a live client holds it
    heldHere.add(lock);
    try {
      await copyInto(new FileKeyValue(path), into);
      fs.unlinkSync(path); // everything is in `into` now (and durable: every write there is fsynced)
      n++;
    } finally {
      heldHere.delete(lock);
      try {
        fs.unlinkSync(lock);
      } catch {
        // gone already
      }
    }
  }
  return n;
}

/** Browsers: moves every free slot's database (but `own`) into `into`; how many slots it emptied. */
export async function adoptBrowserSlots(
  npub: string,
  locks: LockManagerLike | undefined,
  idb: IDBFactory,
  own: number,
  into: KeyValue,
): Promise<number> {
  if (!locks || typeof idb.databases !== "function") return 0;
  const names = new Set((await idb.databases()).map((d) => d.name));
  let n = 0;
  for (let index = 0; index < MAX_STORE_SLOTS; index++) {
    const name = browserStoreName(npub, index);
    if (index === own || !names.has(name)) continue;
    await locks.request(`tally-store:${npub}:${index}`, { ifAvailable: true }, async (lock) => {
      if (lock === null) return; // a live tab holds it
      const from = new IndexedDbKeyValue(name, idb);
      if ((await copyInto(from, into)) === 0) return;
      for (const key of await from.keys("")) await from.delete(key);
      n++;
    });
  }
  return n;
}
