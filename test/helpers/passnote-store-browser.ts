// Bundled into a Chromium page (test/unit/clients/passnote/stores/indexeddb.test.ts): the
// IndexedDB store behind the contract's StoreInstance calls, addressed by a number.
import { IndexedDbStore } from "../../clients/passnote/stores/indexeddb";
import { base64urlEncode, hexToBytes } from "../../shared/encoding";
import type { StoreInstance } from "./passnote-store-contract";
import { instanceOf } from "./passnote-store-harness";

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
