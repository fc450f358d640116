// Bundled into a Chromium page (test/unit/clients/passnote/stores/indexeddb.test.ts): the
// IndexedDB store behind the contract's StoreInstance calls, addressed by a number.
import { IndexedDbStore } from "../../clients/passnote/stores/indexeddb";
import { base64urlEncode, hexToBytes } from "../../shared/encoding";
import type { StoreInstance } from "./passnote-store-contract";
import { instanceOf } from "./passnote-store-harness";
import { valuesStayInTheDatabase, type OnDemandOutcome } from "./passnote-values-on-demand";

const instances = new Map<number, StoreInstance>();
let next = 0;

export async function open(name: string): Promise<number> {
  const id = ++next;
  instances.set(id, instanceOf(await IndexedDbStore.open(name)));
  return id;
}

export async function call(id: number, method: keyof StoreInstance, args: unknown[]): Promise<unknown> {
  return (instances.get(id)![method] as (...a: unknown[]) => Promise<unknown>)(...args);
}

function includes(hay: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

/** Whether any byte value or string kept in the database holds these bytes, raw or in base64url. */
export async function rawContains(name: string, hex: string): Promise<boolean> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const r = indexedDB.open(name);
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  const raw = hexToBytes(hex);
  const text = base64urlEncode(raw);
  const found: boolean[] = [];
  const visit = (v: unknown): void => {
    if (v instanceof Uint8Array) found.push(includes(v, raw) || includes(v, new TextEncoder().encode(text)));
    else if (typeof v === "string") found.push(v.includes(text));
    else if (v && typeof v === "object" && !(v instanceof CryptoKey)) Object.values(v).forEach(visit);
  };
  for (const store of [...db.objectStoreNames]) {
    const all = await new Promise<unknown[]>((resolve, reject) => {
      const r = db.transaction(store).objectStore(store).getAll();
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error);
    });
    all.forEach(visit);
  }
  db.close();
  return found.some(Boolean);
}

/**
 * The peer on IndexedDB across a restart: found a group, write, flush, close; reopen with no keys
 * given; what the new peer sees.
 */
export async function peerRestart(
  name: string,
): Promise<{ value: unknown; sameDevice: boolean; owner: boolean; newInst: boolean; clockPassed: boolean }> {
  const { PassnotePeer } = await import("../../clients/passnote/peer");
  const { MemoryBus } = await import("../../clients/passnote/memory-bus");
  const { foundGroup } = await import("../../clients/passnote/protocol/roster");
  const bus = new MemoryBus();
  let now = 2_000_000_000_000;
  const p1 = new PassnotePeer({
    transport: await bus.connect(),
    identity: foundGroup(),
    store: await IndexedDbStore.open(name),
    now: () => now,
  });
  const first = p1.put("notes", "n1", { text: "kept" });
  await p1.flushed();
  p1.close();
  await p1.store.close();
  now -= 60_000;
  const p2 = new PassnotePeer({ transport: await bus.connect(), store: await IndexedDbStore.open(name), now: () => now });
  const second = p2.put("notes", "n2", 1);
  const out = {
    value: await p2.read("notes", "n1"),
    sameDevice: p2.engine.deviceId === p1.engine.deviceId,
    owner: p2.engine.isOwner,
    newInst: p2.engine.inst !== p1.engine.inst,
    clockPassed: second.hlc > first.hlc,
  };
  p2.close();
  await p2.store.close();
  return out;
}

/** Values on demand over IndexedDB (test/helpers/passnote-values-on-demand.ts). */
export async function valuesOnDemand(name: string): Promise<OnDemandOutcome> {
  return valuesStayInTheDatabase(() => IndexedDbStore.open(name));
}

/**
 * Keys first in IndexedDB (their seal is WebCrypto's, so asynchronous): a device founds its group
 * and writes records in the same turn; until every write is durable the database is read over and
 * over, each read one transaction over the records and the keys. The seal is made slow (200 ms,
 * as on a slow phone), so that a record written before the keys would be seen. What the reads saw.
 */
export async function keysFirst(name: string): Promise<{ reads: number; recordsWithoutKeys: number; records: number; keys: boolean }> {
  const { PassnotePeer } = await import("../../clients/passnote/peer");
  const { MemoryBus } = await import("../../clients/passnote/memory-bus");
  const { foundGroup } = await import("../../clients/passnote/protocol/roster");
  const store = await IndexedDbStore.open(name);
  const subtle = crypto.subtle;
  const encrypt = subtle.encrypt;
  subtle.encrypt = async (...args: Parameters<SubtleCrypto["encrypt"]>) => {
    await new Promise((r) => setTimeout(r, 200));
    return encrypt.apply(subtle, args);
  };
  const raw = await new Promise<IDBDatabase>((resolve, reject) => {
    const r = indexedDB.open(name);
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  const read = () =>
    new Promise<{ records: number; keys: boolean }>((resolve, reject) => {
      const tx = raw.transaction(["records", "meta"], "readonly");
      const count = tx.objectStore("records").count();
      const keys = tx.objectStore("meta").get("keys");
      tx.oncomplete = () => resolve({ records: count.result, keys: keys.result !== undefined });
      tx.onerror = () => reject(tx.error);
    });
  const peer = new PassnotePeer({ transport: await new MemoryBus().connect(), store, identity: foundGroup(), antiEntropyIntervalMs: 0 });
  for (let i = 0; i < 3; i++) peer.put("notes", `n${i}`, { i });
  let done = false;
  const flushed = peer.flushed().then(() => (done = true));
  let reads = 0;
  let recordsWithoutKeys = 0;
  while (!done) {
    const r = await read();
    reads++;
    if (r.records > 0 && !r.keys) recordsWithoutKeys++;
  }
  await flushed;
  subtle.encrypt = encrypt;
  const last = await read();
  raw.close();
  await peer.close();
  return { reads, recordsWithoutKeys, records: last.records, keys: last.keys };
}
