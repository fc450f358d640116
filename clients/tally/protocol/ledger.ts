// The ledger and its sync messages (the Tally protocol sections 12 and 13): which entries a peer gets, how
// a client says what it holds (every key, compactly), in which order entries apply, and how an
// answer is cut into messages that fit one envelope (an entry too large for one is cut in pieces).
// Pure; the client's sync engine (clients/tally/sync.ts) drives it. The entry <-> inner message
// mapping is in ./entry.ts.
import * as z from "zod";
import { sha256 } from "@noble/hashes/sha2.js";
import { base64Decode, base64Encode, bytesToHex, hexToBytes, isBase64, utf8Decode, utf8Encode } from "../../../shared/encoding";
import { verifyLedgerEntry } from "../../../shared/tally/proof";
import { MAX_PLAINTEXT_SIZE } from "../../../shared/tally/nip44";
import { innerToLedgerEntry, ledgerEntryToInner, ledgerKey, type LedgerEntry } from "../../../shared/tally/entry";

export { innerToLedgerEntry, ledgerEntryToInner, ledgerKey, verifyLedgerEntry, type LedgerEntry };

/** Sync message types (12.3). They carry no business event, are never receipted (12.3, 13.7). */
export const SYNC_HELLO = "sync_hello";
export const SYNC_DATA = "sync_data";

export const SYNC_LIMITS = {
  /** Bytes of one sync message's payload JSON, leaving room for the signed inner message around it. */
  max_payload_bytes: MAX_PLAINTEXT_SIZE - 4_096,
  /** Bytes of a known-key hash in a sync_hello (decision: 64 bits; see knownHash). */
  known_hash_bytes: 8,
  /** Known-key hashes in one sync_hello part (their base64 fits one message). */
  known_per_hello_part: 5_000,
  /** Parts of one hello or one answer the receiver assembles; a larger set is ignored. */
  max_parts: 4_096,
  /**
   * sync_data parts per answer round when the relay carries them (decision: the recipient's relay
   * queue stays usable; the asker pulls the next round with a new hello when `more` is set).
   */
  relay_window_parts: 4,
  /**
   * Bytes of one sync_data payload carrying a single large entry to an asker without the piece
   * extension: the NIP-44 limit less the signed inner message around it (its fields and the
   * authorship proof take under 1.5 KB).
   */
  seed_single_payload_bytes: MAX_PLAINTEXT_SIZE - 1_536,
  /** Unfinished hello or answer sets kept per peer; an older one is dropped for a newer one. */
  pending_sets_per_peer: 4,
} as const;

// ---- payloads ---------------------------------------------------------------------------

/** Fields that make a message one part of a set (a hello or an answer in several messages). */
const setFields = {
  set: z.string().min(1).max(64).optional(),
  part: z.number().int().min(0).optional(),
  parts: z.number().int().min(1).max(SYNC_LIMITS.max_parts).optional(),
};
const partsConsistent = (p: { set?: string; part?: number; parts?: number }) =>
  p.set === undefined ? p.part === undefined && p.parts === undefined : p.part !== undefined && p.parts !== undefined && p.part < p.parts;

/**
 * What a hello's `extensions` may name. "parts": the asker reads answers cut into sets of parts
 * (`set`, `part`, `parts`), entries in `piece`s, and windows (`more`). A responder sends these only
 * to an asker that announced them (or whose hello itself uses sets or `known`); to any other it
 * answers in the Tally protocol's form: plain `entries`, whole, all of them.
 */
const SYNC_EXTENSIONS = ["parts"] as const;

/**
 * sync_hello (12.5). `known_ids` is the Tally protocol's form (ids alone), which every client reads. This
 * client names what it holds in both forms when they fit one message: `known_ids` (every id) and
 * `known`: the base64 of the 8-byte hashes of every (from_user_id, id); a larger conversation is
 * named by `known` alone in as many parts as it takes (`known_ids: []`). A responder that finds
 * `known` reads only it (a key names an entry exactly; an id alone can be reused by a third party).
 */
export const syncHelloPayloadSchema = z
  .looseObject({
    // No count bound: the message's size bounds it (a hello with any number of ids is answered).
    known_ids: z.array(z.string()).optional(),
    extensions: z.array(z.string().max(64)).max(16).optional(),
    known: z
      .string()
      .refine(isBase64)
      .refine((s) => base64Decode(s).length % SYNC_LIMITS.known_hash_bytes === 0, "not a list of hashes")
      .optional(),
    ...setFields,
  })
  .refine(partsConsistent, "set, part and parts go together");

/** One piece of an entry too large for one message (decision): base64 of a slice of its JSON. */
const pieceSchema = z.object({ index: z.number().int().min(0), count: z.number().int().min(2), data: z.string().refine(isBase64) });

/** sync_data (12.6): `entries`, plus (this client's additions) the part of an answer set, a piece, `more`. */
export const syncDataPayloadSchema = z
  .looseObject({ entries: z.array(z.unknown()), piece: pieceSchema.optional(), more: z.boolean().optional(), ...setFields })
  .refine(partsConsistent, "set, part and parts go together");

export type SyncHelloPayload = z.infer<typeof syncHelloPayloadSchema>;
export type SyncDataPayload = z.infer<typeof syncDataPayloadSchema>;

// ---- what each side holds ---------------------------------------------------------------

/** How an entry is treated (12.7). */
type EntryClass = "inbound" | "outbound" | "foreign";

export function classifyEntry(entry: Pick<LedgerEntry, "from_user_id" | "to_user_id">, me: string): EntryClass {
  if (entry.to_user_id === me) return "inbound"; // addressed to me (self-messages count as inbound-like)
  if (entry.from_user_id === me) return "outbound";
  return "foreign";
}

/**
 * Chronological order (12.7) by the instant of originated_at (ISO-8601 with any offset: `+02:00`
 * and `Z` compare as times, not as text), then author and id, so dependent entries apply after
 * their causes. An originated_at that is not a time sorts after every time, by its text.
 */
export function chronological<T extends Pick<LedgerEntry, "originated_at" | "id" | "from_user_id">>(entries: T[]): T[] {
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const keyed = entries.map((e) => ({ e, t: instant(e.originated_at) }));
  keyed.sort(
    (x, y) =>
      (x.t === y.t ? 0 : Number.isNaN(x.t) ? 1 : Number.isNaN(y.t) ? -1 : x.t - y.t) ||
      (Number.isNaN(x.t) && Number.isNaN(y.t) ? cmp(x.e.originated_at, y.e.originated_at) : 0) ||
      cmp(x.e.from_user_id, y.e.from_user_id) ||
      cmp(x.e.id, y.e.id),
  );
  return keyed.map((k) => k.e);
}

/** Milliseconds since the epoch of an ISO-8601 time (NaN for anything else). */
function instant(s: unknown): number {
  return typeof s === "string" ? Date.parse(s) : NaN;
}

/** Whether an entry belongs to the conversation with `peer` (12.6), or to the full ledger for an own device (13.6). */
function inConversation(e: Pick<LedgerEntry, "from_user_id" | "to_user_id">, me: string, peer: string): boolean {
  if (peer === me) return true;
  return (e.from_user_id === peer && e.to_user_id === me) || (e.from_user_id === me && e.to_user_id === peer);
}

/**
 * Decision: an entry is named in a hello by the first 8 bytes of SHA-256 of its key
 * `from_user_id + " " + id`. Two different keys share a hash with probability about n·m / 2^64
 * (10^-11 for two ledgers of 10^4 entries): such an entry is not resent in that round.
 */
function knownHash(e: { from_user_id: string; id: string }): string {
  return bytesToHex(sha256(utf8Encode(ledgerKey(e))).subarray(0, SYNC_LIMITS.known_hash_bytes));
}

/** What a peer says it holds: seed-form ids, and hashes of keys. */
interface Known {
  ids: Set<string>;
  hashes: Set<string>;
}

export function emptyKnown(): Known {
  return { ids: new Set(), hashes: new Set() };
}

/**
 * The sync_hello parts naming every entry held for `peer` (12.5), all of them, compactly, and
 * every message of the peer's this client ignored (`ignored`: they never enter the ledger, yet the
 * asker has them, so the responder must not send them again and its answer moves on, 12.6).
 */
export function helloParts(
  ledger: LedgerEntry[],
  me: string,
  peer: string,
  setId: string,
  ignored: ReadonlyArray<{ from_user_id: string; id: string }> = [],
): SyncHelloPayload[] {
  const held = [...ledger.filter((e) => inConversation(e, me, peer)), ...ignored.filter((k) => peer === me || k.from_user_id === peer)];
  const hashes = held.map((e) => knownHash(e));
  const extensions = [...SYNC_EXTENSIONS];
  const packed = (slice: string[]) => {
    const bytes = new Uint8Array(slice.length * SYNC_LIMITS.known_hash_bytes);
    for (const [j, h] of slice.entries()) bytes.set(hexToBytes(h), j * SYNC_LIMITS.known_hash_bytes);
    return base64Encode(bytes);
  };
  // Both forms in every message: a client that reads only the Tally protocol's known_ids then knows
  // everything this one holds when it fits one message (12.5), and a part's share of it otherwise.
  const whole = { known_ids: uniqueIds(held), known: packed(hashes), extensions };
  if (utf8Encode(JSON.stringify(whole)).length <= SYNC_LIMITS.max_payload_bytes) return [whole];
  // Cut by size: each part names its slice of the entries by both ids and hashes.
  const budget = SYNC_LIMITS.max_payload_bytes - HELLO_PART_OVERHEAD;
  const slices: number[] = [0];
  let size = 0;
  for (let i = 0; i < held.length; i++) {
    const cost = utf8Encode(JSON.stringify(held[i].id)).length + 1 + Math.ceil((SYNC_LIMITS.known_hash_bytes * 4) / 3) + 1;
    const count = i - slices[slices.length - 1];
    if (count > 0 && (size + cost > budget || count >= SYNC_LIMITS.known_per_hello_part)) {
      slices.push(i);
      size = 0;
    }
    size += cost;
  }
  slices.push(held.length);
  const n = slices.length - 1;
  const parts: SyncHelloPayload[] = [];
  for (let i = 0; i < n; i++) {
    const [from, to] = [slices[i], slices[i + 1]];
    parts.push({
      known_ids: uniqueIds(held.slice(from, to)),
      known: packed(hashes.slice(from, to)),
      extensions,
      set: setId,
      part: i,
      parts: n,
    });
  }
  return parts;
}

/** Room for the fields around `known_ids` and `known` in one hello part. */
const HELLO_PART_OVERHEAD = 512;

function uniqueIds(keys: ReadonlyArray<{ id: string }>): string[] {
  return [...new Set(keys.map((e) => e.id))];
}

/** Whether the asker of a hello reads this client's answer extensions (SYNC_EXTENSIONS). */
export function readsExtensions(parts: SyncHelloPayload[]): boolean {
  return parts.some((p) => p.extensions?.includes("parts") || p.known !== undefined || p.set !== undefined);
}

/** What the parts of one hello name, together: the keys' hashes when it has them, else the Tally protocol's ids. */
export function knownFromHello(parts: SyncHelloPayload[]): Known {
  const known = emptyKnown();
  const hashed = parts.some((p) => p.known !== undefined);
  for (const p of parts) {
    if (!hashed) for (const id of p.known_ids ?? []) known.ids.add(id);
    if (p.known) {
      const bytes = base64Decode(p.known);
      for (let i = 0; i < bytes.length; i += SYNC_LIMITS.known_hash_bytes) {
        known.hashes.add(bytesToHex(bytes.subarray(i, i + SYNC_LIMITS.known_hash_bytes)));
      }
    }
  }
  return known;
}

/**
 * The entries to answer a hello with (12.6, 13.6): with a friend, those between the two parties;
 * with an own device (peer === me), every entry; minus what the asker holds; chronological.
 */
export function entriesForPeer(ledger: LedgerEntry[], me: string, peer: string, known: Known = emptyKnown()): LedgerEntry[] {
  return chronological(ledger.filter((e) => inConversation(e, me, peer) && !known.ids.has(e.id) && !known.hashes.has(knownHash(e))));
}

// ---- cutting an answer into messages ------------------------------------------------------

/** Room for the fields around `entries` in one sync_data payload. */
const PART_OVERHEAD = 256;

/**
 * Cuts chronological entries into sync_data parts of one answer set, each within `maxBytes` of
 * payload JSON, in order; an entry too large for one part travels as pieces in consecutive parts.
 * With `windowParts`, stops after that many parts (never before the first entry) and sets `more`
 * on every part, so the asker pulls the rest with a new hello.
 */
export function syncDataParts(
  entries: LedgerEntry[],
  setId: string,
  opts: { maxBytes?: number; windowParts?: number } = {},
): SyncDataPayload[] {
  const maxBytes = opts.maxBytes ?? SYNC_LIMITS.max_payload_bytes;
  const budget = maxBytes - PART_OVERHEAD;
  const window = opts.windowParts ?? Infinity;
  const bodies: Array<Pick<SyncDataPayload, "entries" | "piece">> = [];
  let current: LedgerEntry[] = [];
  let size = 2;
  let more = false;
  const flush = () => {
    if (current.length > 0) bodies.push({ entries: current });
    current = [];
    size = 2;
  };
  for (const e of entries) {
    const json = JSON.stringify(e);
    const n = utf8Encode(json).length + 1;
    if (n + 2 <= budget) {
      if (size + n > budget) flush();
      if (bodies.length >= window) {
        more = true;
        break;
      }
      current.push(e);
      size += n;
      continue;
    }
    // Too large for one part: pieces of its JSON's bytes, base64 (4 characters per 3 bytes).
    flush();
    const bytes = utf8Encode(json);
    const per = Math.floor(budget / 4) * 3;
    const count = Math.ceil(bytes.length / per);
    if (bodies.length > 0 && bodies.length + count > window) {
      more = true;
      break;
    }
    for (let i = 0; i < count; i++) {
      bodies.push({ entries: [], piece: { index: i, count, data: base64Encode(bytes.subarray(i * per, (i + 1) * per)) } });
    }
  }
  if (!more) flush();
  if (bodies.length === 0) return [];
  return bodies.map((b, i) => ({ ...b, set: setId, part: i, parts: bodies.length, ...(more ? { more: true } : {}) }));
}

/**
 * An answer in the Tally protocol's form (12.6), for an asker that announced no extensions: `entries` only,
 * every entry the asker lacks, whole, no window. Entries are packed up to the usual payload bound;
 * an entry larger than that goes alone in a message when it fits one (up to
 * `seed_single_payload_bytes`). Returns the payloads and the entries too large for any message.
 */
export function seedSyncData(
  entries: LedgerEntry[],
  maxBytes = SYNC_LIMITS.max_payload_bytes,
): { payloads: SyncDataPayload[]; tooLarge: LedgerEntry[] } {
  const payloads: SyncDataPayload[] = [];
  const tooLarge: LedgerEntry[] = [];
  const budget = maxBytes - PART_OVERHEAD;
  let current: LedgerEntry[] = [];
  let size = 2;
  for (const e of entries) {
    const n = utf8Encode(JSON.stringify(e)).length + 1;
    if (n + 2 > budget) {
      if (n + 2 <= SYNC_LIMITS.seed_single_payload_bytes - PART_OVERHEAD) payloads.push({ entries: [e] });
      else tooLarge.push(e);
      continue;
    }
    if (size + n > budget) {
      payloads.push({ entries: current });
      current = [];
      size = 2;
    }
    current.push(e);
    size += n;
  }
  if (current.length > 0) payloads.push({ entries: current });
  return { payloads, tooLarge };
}

/** The raw entries of a complete answer set, in part order, pieces joined. Bad pieces are skipped. */
export function entriesOfParts(parts: SyncDataPayload[]): unknown[] {
  const out: unknown[] = [];
  let pieces: Uint8Array[] = [];
  for (const p of parts) {
    out.push(...p.entries);
    if (!p.piece) {
      pieces = [];
      continue;
    }
    if (p.piece.index !== pieces.length) {
      pieces = [];
      if (p.piece.index !== 0) continue;
    }
    pieces.push(base64Decode(p.piece.data));
    if (pieces.length === p.piece.count) {
      try {
        const total = new Uint8Array(pieces.reduce((n, b) => n + b.length, 0));
        let off = 0;
        for (const b of pieces) {
          total.set(b, off);
          off += b.length;
        }
        out.push(JSON.parse(utf8Decode(total)));
      } catch {
        // a piece set that does not parse is dropped
      }
      pieces = [];
    }
  }
  return out;
}

/**
 * Collects the parts of sets (hellos or answers) per peer until each is complete. A message
 * without set fields is a set of one. Keeps at most `pending_sets_per_peer` unfinished sets per
 * peer, dropping the oldest.
 */
export class PartCollector<P extends { set?: string; part?: number; parts?: number }> {
  private readonly pending_ = new Map<string, Map<string, { parts: number; got: Map<number, P> }>>();

  /** Adds one part; returns the whole set, in part order, once it is complete. */
  add(peer: string, p: P): P[] | undefined {
    if (p.set === undefined || p.parts === undefined || p.part === undefined) return [p];
    if (p.parts === 1) return [p];
    let sets = this.pending_.get(peer);
    if (!sets) {
      sets = new Map();
      this.pending_.set(peer, sets);
    }
    let s = sets.get(p.set);
    if (!s) {
      s = { parts: p.parts, got: new Map() };
      sets.set(p.set, s);
      while (sets.size > SYNC_LIMITS.pending_sets_per_peer) sets.delete(sets.keys().next().value as string);
    }
    if (s.parts !== p.parts) return undefined;
    s.got.set(p.part, p);
    if (s.got.size < s.parts) return undefined;
    sets.delete(p.set);
    if (sets.size === 0) this.pending_.delete(peer);
    return [...s.got.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => v);
  }

  /** Whether a set of a peer is still unfinished. */
  pending(peer: string, set: string): boolean {
    return this.pending_.get(peer)?.has(set) ?? false;
  }

  /** Forgets one unfinished set. */
  drop(peer: string, set: string): void {
    const sets = this.pending_.get(peer);
    sets?.delete(set);
    if (sets?.size === 0) this.pending_.delete(peer);
  }

  /** Forgets a peer's unfinished sets. */
  forget(peer: string): void {
    this.pending_.delete(peer);
  }
}

/**
 * Judges received entries (12.7): well-formed, proof valid (forged entries are dropped silently),
 * involving me; then chronological. With a friend, only entries between the two parties are
 * taken; from an own device, any entry of mine.
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

const ledgerEntrySchema = z.looseObject({
  id: z.string().min(1).max(128),
  type: z.string().min(1),
  from_user_id: z.string(),
  to_user_id: z.string(),
  originated_at: z.string(),
  timestamp: z.string(),
});
