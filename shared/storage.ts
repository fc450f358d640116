// Relay-wide storage totals (docs/hostile.md, "Nothing is stored for free"; docs/hostile.md,
// "Relay-wide totals"): the stored kinds, the settings that bound each across the relay, and the
// lease arithmetic both sides use. Objects that store hold a lease of bytes from the one
// RelayLedger object and charge what they keep against it with no await between the check and
// the write; the ledger grants a lease only while the kind's total has room. Pure.
import { STORAGE_LIMITS } from "./limits";

export const STORAGE_KINDS = ["tally", "mailbox", "host"] as const;
export type StorageKind = (typeof STORAGE_KINDS)[number];

/** The setting that bounds each kind, and its default. */
export const STORAGE_SETTINGS = {
  tally: { setting: "STORAGE_TALLY_BYTES", fallback: STORAGE_LIMITS.tally_bytes },
  mailbox: { setting: "STORAGE_MAILBOX_BYTES", fallback: STORAGE_LIMITS.mailbox_bytes },
  host: { setting: "STORAGE_HOST_BYTES", fallback: STORAGE_LIMITS.host_bytes },
} as const satisfies Record<StorageKind, { setting: string; fallback: number }>;

export type StorageTotals = Record<StorageKind, number>;

/**
 * A total setting's value: decimal bytes, optionally with a binary suffix (KiB, MiB, GiB, TiB);
 * empty means the default. Null when it is none of these.
 */
export function parseBytesSetting(value: string | undefined): number | null | undefined {
  const v = (value ?? "").trim();
  if (v === "") return undefined;
  const m = /^(\d{1,16})\s*(|KiB|MiB|GiB|TiB)$/i.exec(v);
  if (!m) return null;
  const unit = { "": 1, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40 }[m[2].toLowerCase() as "" | "kib" | "mib" | "gib" | "tib"];
  const n = Number(m[1]) * unit;
  return Number.isSafeInteger(n) ? n : null;
}

/** The totals in force: each setting when it is valid, else its default (`invalid` names those that were not). */
export function storageTotals(
  env: Partial<Record<(typeof STORAGE_SETTINGS)[StorageKind]["setting"], string>>,
): StorageTotals & { invalid: string[] } {
  const invalid: string[] = [];
  const out = {} as StorageTotals;
  for (const kind of STORAGE_KINDS) {
    const { setting, fallback } = STORAGE_SETTINGS[kind];
    const parsed = parseBytesSetting(env[setting]);
    if (parsed === null) invalid.push(setting);
    out[kind] = parsed ?? fallback;
  }
  return { ...out, invalid };
}

/** What storing one row of `bytes` bytes charges a total: a fixed per-row overhead plus the bytes. */
export function rowBytes(bytes = 0): number {
  return STORAGE_LIMITS.row_overhead_bytes + bytes;
}

/** How far past what it needs an object holding `used` bytes leases: grows with what it holds, within the two lease bounds. */
export function leaseBlock(used: number): number {
  return Math.min(STORAGE_LIMITS.lease_max_bytes, Math.max(STORAGE_LIMITS.lease_min_bytes, Math.ceil(used / 4)));
}

/** What an object that must hold `need` bytes asks for: at least `need`, ideally a block more. */
export function leaseRequest(need: number): { need: number; want: number } {
  return { need, want: need + leaseBlock(need) };
}

/**
 * What an object holding `used` bytes under a lease of `granted` keeps: all of it while the
 * slack is within two blocks, else `used` and one block; nothing once it holds nothing.
 */
export function leaseKeep(used: number, granted: number): number {
  if (used <= 0) return 0;
  const block = leaseBlock(used);
  return granted - used > 2 * block ? used + block : granted;
}

/**
 * The ledger's decision for one holder: with `others` bytes leased to everyone else and the
 * kind's `total`, the holder's new lease: `want` when it fits, else as much as fits when that
 * still covers `need`, else null (refused: the total is reached).
 */
export function grantLease(others: number, total: number, need: number, want: number): number | null {
  const room = total - others;
  if (need > room) return null;
  return Math.min(want, room);
}

/**
 * A share of a total (docs/hostile.md, "Shares of a total"): a byte budget of `capacity` that
 * refills evenly over `periodMs`, charged for what is stored. `tokens` may go below zero (a charge
 * after a check that let it through); `at` is when it was last brought up to date.
 */
export interface ShareState {
  tokens: number;
  at: number;
}

/** The bytes a share of `fraction` of a total of `total` bytes holds (at least one row). */
export function shareCapacity(total: number, fraction: number): number {
  return Math.max(rowBytes(), Math.floor(total * fraction));
}

/** The share as it is at `now` (a fresh one is full). */
export function shareAt(s: ShareState | undefined, capacity: number, periodMs: number, now: number): ShareState {
  if (!s) return { tokens: capacity, at: now };
  const refill = (Math.max(0, now - s.at) * capacity) / periodMs;
  return { tokens: Math.min(capacity, s.tokens + refill), at: Math.max(now, s.at) };
}

/**
 * Milliseconds until storing `cost` bytes fits the share (0: now). A cost larger than the whole
 * share waits for a full share, so any one store within the per-name bounds is possible.
 */
export function shareWaitMs(s: ShareState, capacity: number, periodMs: number, cost: number): number {
  const need = Math.min(cost, capacity);
  return s.tokens >= need ? 0 : Math.max(1, Math.ceil(((need - s.tokens) * periodMs) / capacity));
}

/** The share after `cost` bytes were stored. */
export function shareCharge(s: ShareState, cost: number): ShareState {
  return { tokens: s.tokens - cost, at: s.at };
}
