// The ledger and its sync messages (seed 003 sections 12 and 13): entries, how an entry is made
// from a signed inner message and judged again, which entries a peer gets, in which order they
// apply, and how they are cut into messages that fit one envelope. Pure; the client's sync engine
// (clients/tally/sync.ts) drives it.
import * as z from "zod";
import { ledgerEntryToInner, verifyLedgerEntry } from "./proof";
import { MAX_PLAINTEXT_SIZE } from "./nip44";

export { ledgerEntryToInner, verifyLedgerEntry };

/** Sync message types (12.3). They carry no business event, are never receipted (12.3, 13.7). */
export const SYNC_HELLO = "sync_hello";
export const SYNC_DATA = "sync_data";

export const SYNC_LIMITS = {
  /**
   * known_ids in one sync_hello: the most recent ones (decision: a hello must fit one envelope;
   * entries older than the window are sent again by the peer and dropped by id on arrival).
   */
  max_known_ids: 1_500,
  /** Bytes of entries' JSON in one sync_data, leaving room for the inner message around them. */
  max_sync_data_bytes: MAX_PLAINTEXT_SIZE - 4_096,
} as const;

/**
 * A ledger entry (12.6): the signed inner message as it was, with created_at renamed
 * originated_at, and `timestamp` the time this client appended it. Unknown fields of the inner
 * message are kept, so the authorship proof still verifies.
 */
export interface LedgerEntry {
  id: string;
  type: string;
  from_user_id: string;
  to_user_id: string;
  originated_at: string;
  timestamp: string;
  payload?: unknown;
  [k: string]: unknown;
}

export const ledgerEntrySchema = z.looseObject({
  id: z.string().min(1).max(128),
  type: z.string().min(1),
  from_user_id: z.string(),
  to_user_id: z.string(),
  originated_at: z.string(),
  timestamp: z.string(),
});

export const syncHelloPayloadSchema = z.object({ known_ids: z.array(z.string()).max(SYNC_LIMITS.max_known_ids * 2) });
export const syncDataPayloadSchema = z.object({ entries: z.array(z.unknown()) });

export function innerToLedgerEntry(inner: Record<string, unknown>, appendedAt: Date): LedgerEntry {
  const { created_at, ...rest } = inner;
  return { ...rest, originated_at: created_at as string, timestamp: appendedAt.toISOString() } as LedgerEntry;
}

/** How a received entry is treated (12.7). */
export type EntryClass = "inbound" | "outbound" | "foreign";

export function classifyEntry(entry: Pick<LedgerEntry, "from_user_id" | "to_user_id">, me: string): EntryClass {
  if (entry.to_user_id === me) return "inbound"; // addressed to me (self-messages count as inbound-like)
  if (entry.from_user_id === me) return "outbound";
  return "foreign";
}

/** Chronological order by originated_at, then id, so dependent entries apply after their causes. */
export function chronological<T extends Pick<LedgerEntry, "originated_at" | "id">>(entries: T[]): T[] {
  return [...entries].sort((a, b) =>
    a.originated_at < b.originated_at ? -1 : a.originated_at > b.originated_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0,
  );
}

/**
 * The entries to answer a sync_hello with (12.6, 13.6): with a friend, those between the two
 * parties; with an own device (peer === me), every entry; minus the ids the asker knows.
 */
export function entriesForPeer(ledger: LedgerEntry[], me: string, peer: string, knownIds: Iterable<string>): LedgerEntry[] {
  const known = new Set(knownIds);
  return ledger.filter((e) => {
    if (known.has(e.id)) return false;
    if (peer === me) return true;
    return (e.from_user_id === peer && e.to_user_id === me) || (e.from_user_id === me && e.to_user_id === peer);
  });
}

/** The ids to put in a sync_hello for `peer`: the most recent first-class window of them. */
export function knownIdsFor(ledger: LedgerEntry[], me: string, peer: string): string[] {
  const mine = entriesForPeer(ledger, me, peer, []);
  return chronological(mine)
    .slice(-SYNC_LIMITS.max_known_ids)
    .map((e) => e.id);
}

/** Cuts entries into groups whose JSON stays within `maxBytes` (one sync_data each). */
export function chunkEntries(entries: LedgerEntry[], maxBytes: number = SYNC_LIMITS.max_sync_data_bytes): LedgerEntry[][] {
  const enc = new TextEncoder();
  const chunks: LedgerEntry[][] = [];
  let current: LedgerEntry[] = [];
  let size = 2;
  for (const e of entries) {
    const n = enc.encode(JSON.stringify(e)).length + 1;
    if (n + 2 > maxBytes) continue; // an entry that can never fit one message is not sent
    if (size + n > maxBytes && current.length > 0) {
      chunks.push(current);
      current = [];
      size = 2;
    }
    current.push(e);
    size += n;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * Judges the entries of a received sync_data (12.7): well-formed, proof valid (forged entries are
 * dropped silently), involving me; then chronological. With a friend, only entries between the
 * two parties are taken; from an own device, any entry of mine.
 */
export function acceptableEntries(raw: unknown[], me: string, peer: string): LedgerEntry[] {
  const out: LedgerEntry[] = [];
  for (const r of raw) {
    const parsed = ledgerEntrySchema.safeParse(r);
    if (!parsed.success) continue;
    const e = parsed.data as LedgerEntry;
    if (classifyEntry(e, me) === "foreign") continue;
    if (peer !== me && e.from_user_id !== peer && e.to_user_id !== peer) continue;
    if (!verifyLedgerEntry(e)) continue;
    out.push(e);
  }
  return chronological(out);
}
