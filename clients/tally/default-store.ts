// The store a Tally client uses when the app names none (the Tally protocol sections 1, 7, 8.2: the outbox,
// the ledger and the processed set persist across restarts). Decision: IndexedDB where it exists
// (browsers; database `tally-<npub>`), else a log file in Node (`<TALLY_STORE_DIR or ./.tally>/<npub>.log`);
// a store in memory only when the app asks for it (`store: "memory"`). Anywhere else the client
// refuses to start without a store rather than lose data silently. Each open client holds a slot
// of its own (store-slots.ts): a second tab or process of the same user gets a second store.
import { FileKeyValue } from "../node/file-key-value";
import { IndexedDbKeyValue } from "./indexeddb";
import { KeyValueTallyStore, memoryStore, type TallyStore } from "./store";
import { DeferredKeyValue, browserStoreName, claimBrowserSlot, claimNodeSlot, nodeStorePath, type Slot } from "./store-slots";

/** The directory of the default file stores in Node, unless TALLY_STORE_DIR names another. */
export const DEFAULT_STORE_DIR = ".tally";

/** A default store, and the release of the slot it holds (when the client closes). */
export interface DefaultStore {
  store: TallyStore;
  release(): void;
}

export function defaultStore(npub: string, choice?: TallyStore | "memory"): TallyStore {
  return openDefaultStore(npub, choice).store;
}

export function openDefaultStore(npub: string, choice?: TallyStore | "memory"): DefaultStore {
  const none = () => {};
  if (choice === "memory") return { store: memoryStore(), release: none };
  if (choice) return { store: choice, release: none };
  const g = globalThis as {
    indexedDB?: IDBFactory;
    navigator?: { locks?: Parameters<typeof claimBrowserSlot>[1] };
    process?: {
      env?: Record<string, string | undefined>;
      getBuiltinModule?: (name: string) => unknown;
      pid: number;
      kill(pid: number, s: 0): boolean;
      on(e: "exit", fn: () => void): unknown;
    };
  };
  if (g.indexedDB) {
    const idb = g.indexedDB;
    const slot = claimBrowserSlot(npub, g.navigator?.locks);
    let released = false;
    void slot.then((s) => released && s.release());
    const kv = new DeferredKeyValue(slot.then((s: Slot) => new IndexedDbKeyValue(browserStoreName(npub, s.index), idb)));
    return {
      store: new KeyValueTallyStore(kv),
      release: () => {
        released = true;
        void slot.then((s) => s.release());
      },
    };
  }
  if (g.process?.getBuiltinModule) {
    const dir = (g.process.env?.TALLY_STORE_DIR ?? DEFAULT_STORE_DIR).replace(/\/+$/, "");
    const slot = claimNodeSlot(g.process.getBuiltinModule("node:fs") as typeof import("node:fs"), g.process, dir, npub);
    return { store: new KeyValueTallyStore(new FileKeyValue(nodeStorePath(dir, npub, slot.index))), release: slot.release };
  }
  throw new Error('no persistent store here: pass `store` (a TallyStore), or `store: "memory"` to keep nothing');
}
