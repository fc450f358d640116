// The ledger as an app reads it (the Tally protocol section 12): by peer and time, sorted by when
// each message was made (originated_at), in pages. A store that keeps a time index
// (KeyValueTallyStore: a key `history/<time>/<from>/<to>/<id>` beside each entry) is paged from
// its keys and reads only the page's entries; any other store is read whole and sorted.
import type { LedgerEntry } from "../../shared/tally/entry";
import { historyKey } from "./history-key";

export interface HistoryQuery {
  /** Only the conversation with this user (entries from or to it). */
  peer?: string;
  /** Only entries made before / at or after this time (ms since the epoch). */
  before?: number;
  after?: number;
  /** Entries per page; default 50. */
  limit?: number;
  /** "desc" (default): newest first; "asc": oldest first. */
  order?: "asc" | "desc";
  /** The previous page's `next`. */
  cursor?: string;
}

export interface HistoryPage {
  entries: LedgerEntry[];
  /** Pass as `cursor` for the next page; absent on the last page. */
  next?: string;
}

/** A store's time index of its ledger: one key per entry, `<time>/<from>/<to>/<id>` (each part URI-encoded), and the entry by that key. */
interface HistoryIndex {
  historyKeys(): Promise<string[]>;
  historyEntry(key: string): Promise<LedgerEntry | undefined>;
}

function parts(key: string): { time: number; from: string; to: string } {
  const [time, from, to] = key.split("/").map(decodeURIComponent);
  return { time: Number(time), from, to };
}

/** The part of a store (store.ts TallyStore) history reads. */
interface LedgerSource {
  listLedger(): Promise<LedgerEntry[]>;
}

export async function historyOf(store: LedgerSource, me: string, q: HistoryQuery): Promise<HistoryPage> {
  const limit = Math.max(1, q.limit ?? 50);
  const desc = (q.order ?? "desc") === "desc";
  const index = store as Partial<HistoryIndex>;
  let keys: string[];
  let entryOf: (key: string) => Promise<LedgerEntry | undefined>;
  if (index.historyKeys && index.historyEntry) {
    keys = await index.historyKeys();
    entryOf = (k) => index.historyEntry!(k);
  } else {
    const byKey = new Map((await store.listLedger()).map((e) => [historyKey(e), e]));
    keys = [...byKey.keys()];
    entryOf = async (k) => byKey.get(k);
  }
  const peer = q.peer;
  keys = keys.filter((k) => {
    const p = parts(k);
    if (peer !== undefined && peer !== me && p.from !== peer && p.to !== peer) return false;
    if (q.before !== undefined && p.time >= q.before) return false;
    if (q.after !== undefined && p.time < q.after) return false;
    if (q.cursor !== undefined && (desc ? k >= q.cursor : k <= q.cursor)) return false;
    return true;
  });
  keys.sort();
  if (desc) keys.reverse();
  const page = keys.slice(0, limit);
  const entries: LedgerEntry[] = [];
  for (const k of page) {
    const e = await entryOf(k);
    if (e) entries.push(e);
  }
  return keys.length > limit ? { entries, next: page[page.length - 1] } : { entries };
}
