// The store a Tally client uses when the app names none (seed 003 sections 1, 7, 8.2: the outbox,
// the ledger and the processed set persist across restarts). Decision: IndexedDB where it exists
// (browsers; database `tally-<npub>`), else a log file in Node (`<TALLY_STORE_DIR or ./.tally>/<npub>.log`);
// a store in memory only when the app asks for it (`store: "memory"`). Anywhere else the client
// refuses to start without a store rather than lose data silently.
import { FileKeyValue } from "../node/file-key-value";
import { IndexedDbKeyValue } from "./indexeddb";
import { KeyValueTallyStore, memoryStore, type TallyStore } from "./store";

/** The directory of the default file stores in Node, unless TALLY_STORE_DIR names another. */
export const DEFAULT_STORE_DIR = ".tally";

export function defaultStore(npub: string, choice?: TallyStore | "memory"): TallyStore {
  if (choice === "memory") return memoryStore();
  if (choice) return choice;
  const g = globalThis as { indexedDB?: IDBFactory; process?: { env?: Record<string, string | undefined>; getBuiltinModule?: unknown } };
  if (g.indexedDB) return new KeyValueTallyStore(new IndexedDbKeyValue(`tally-${npub}`, g.indexedDB));
  if (g.process?.getBuiltinModule) {
    const dir = (g.process.env?.TALLY_STORE_DIR ?? DEFAULT_STORE_DIR).replace(/\/+$/, "");
    return new KeyValueTallyStore(new FileKeyValue(`${dir}/${npub}.log`));
  }
  throw new Error('no persistent store here: pass `store` (a TallyStore), or `store: "memory"` to keep nothing');
}
