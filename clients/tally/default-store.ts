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
import { adoptBrowserSlots, adoptNodeSlots } from "./slot-adopt";

/** The directory of the default file stores in Node, unless TALLY_STORE_DIR names another. */
const DEFAULT_STORE_DIR = ".tally";

/** A default store, and the release of the slot it holds (when the client closes). */
interface DefaultStore {
  store: TallyStore;
  release(): void;
  /**
   * Moves what free slots of the user left (their outbox above all) into this store
   * (slot-adopt.ts); done once before the store's first use, and again whenever the client asks
   * (each registration), for a slot freed meanwhile.
   */
  adopt(): Promise<void>;
}

export function defaultStore(npub: string, choice?: TallyStore | "memory"): TallyStore {
  return openDefaultStore(npub, choice).store;
}

export function openDefaultStore(npub: string, choice?: TallyStore | "memory"): DefaultStore {
  const none = () => {};
  const nothing = async () => {};
  if (choice === "memory") return { store: memoryStore(), release: none, adopt: nothing };
  if (choice) return { store: choice, release: none, adopt: nothing };
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
    const locks = g.navigator?.locks;
    const own = slot.then((s: Slot) => new IndexedDbKeyValue(browserStoreName(npub, s.index), idb));
    const adopt = async () => {
      const s = await slot;
      if (!released) await adoptBrowserSlots(npub, locks, idb, s.index, await own);
    };
    const first = adopt().catch((err) => console.warn("tally client: another slot's store could not be taken over", err));
    const kv = new DeferredKeyValue(first.then(() => own));
    return {
      store: new KeyValueTallyStore(kv),
      release: () => {
        released = true;
        void slot.then((s) => s.release());
      },
      adopt: () => first.then(adopt),
    };
  }
  if (g.process?.getBuiltinModule) {
    const dir = (g.process.env?.TALLY_STORE_DIR ?? DEFAULT_STORE_DIR).replace(/\/+$/, "");
    const fs = g.process.getBuiltinModule("node:fs") as typeof import("node:fs");
    const proc = g.process;
    const slot = claimNodeSlot(fs, proc, dir, npub);
    const own = new FileKeyValue(nodeStorePath(dir, npub, slot.index));
    let released = false;
    const adopt = async () => {
      if (!released) await adoptNodeSlots(fs, proc, dir, npub, slot.index, own);
    };
    const first = adopt().catch((err) => console.warn("tally client: another slot's store could not be taken over", err));
    return {
      store: new KeyValueTallyStore(new DeferredKeyValue(first.then(() => own))),
      release: () => {
        released = true;
        slot.release();
      },
      adopt: () => first.then(adopt),
    };
  }
  throw new Error('no persistent store here: pass `store` (a TallyStore), or `store: "memory"` to keep nothing');
}
