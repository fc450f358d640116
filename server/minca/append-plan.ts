// The plan of one POST .../versions at a Minca host (the Minca protocol §4.1: a carrier runs every
// record it takes in through the gates; the profile of the relay's hosting, "Carried spaces"):
// what becomes of each version sent, step by step. Pure: the space's Durable Object runs the
// steps that need storage or another object (is it held, is its key revoked, who pays, what the
// account's carry records say, the write) and records each outcome here; the answer is read off
// the finished plan, one result per version in the order sent.
import { isSelfRevoke } from "../../shared/minca/revoke";
import type { VersionResult } from "./host-wire";
import { rootOf, type Version, type VersionCheck, type VersionRefusal } from "../../shared/minca/version";

/** What becomes of one version of the request. */
export type PlanEntry =
  /** Refused with a reason: nothing of it is kept. */
  | { kind: "refused"; id?: string; reason: VersionRefusal; detail: string }
  /** Already in the log (sent before, or stored by a request running alongside): its first seq. */
  | { kind: "held"; id: string; seq: number }
  /** The same version earlier in this request: the answer of that one. */
  | { kind: "repeat"; id: string; of: number }
  /** Passed the gates and not held: to be charged, read (carry space) and written. */
  | { kind: "fresh"; version: Version; raw: string; bytes: number; payer?: string }
  /** Written by this request with its seq. */
  | { kind: "stored"; id: string; seq: number; version: Version; raw: string; bytes: number; payer: string };

export type FreshEntry = Extract<PlanEntry, { kind: "fresh" }>;

export interface AppendPlan {
  readonly entries: readonly PlanEntry[];
}

/**
 * Step 1, checks and dedup: each arrival's gate verdict (`checks`, in order) and whether the log
 * already holds it (`heldSeq`). A version repeated within the request is planned once.
 */
export function planArrivals(
  checks: VersionCheck[],
  arrived: Array<{ raw: string; bytes: number }>,
  heldSeq: (id: string) => number | undefined,
): AppendPlan {
  const firstAt = new Map<string, number>();
  const entries = checks.map((c, i): PlanEntry => {
    if (!c.ok) return { kind: "refused", ...(c.id ? { id: c.id } : {}), reason: c.reason, detail: c.detail };
    const id = c.version.id;
    const seq = heldSeq(id);
    if (seq !== undefined) return { kind: "held", id, seq };
    const first = firstAt.get(id);
    if (first !== undefined) return { kind: "repeat", id, of: first };
    firstAt.set(id, i);
    return { kind: "fresh", version: c.version, raw: arrived[i].raw, bytes: arrived[i].bytes };
  });
  return { entries };
}

/** The fresh entries with their index in the request. */
export function freshOf(plan: AppendPlan): Array<{ index: number; entry: FreshEntry }> {
  const out: Array<{ index: number; entry: FreshEntry }> = [];
  plan.entries.forEach((entry, index) => {
    if (entry.kind === "fresh") out.push({ index, entry });
  });
  return out;
}

/** The plan with the entries at these indexes refused (a revoked key, an account's verdict). */
export function refuseIn(plan: AppendPlan, refusals: Map<number, { reason: VersionRefusal; detail: string }>): AppendPlan {
  if (refusals.size === 0) return plan;
  return {
    entries: plan.entries.map((e, i) => {
      const r = refusals.get(i);
      return r && e.kind === "fresh" ? { kind: "refused", id: e.version.id, reason: r.reason, detail: r.detail } : e;
    }),
  };
}

/**
 * Step 2, revocation: the authors to ask each root account about, for the accounts that carry
 * this space (a version rooted elsewhere is judged by the gates alone).
 */
export function authorsByRoot(plan: AppendPlan, carrying: readonly string[]): Map<string, string[]> {
  const out = new Map<string, Set<string>>();
  for (const { entry } of freshOf(plan)) {
    const root = rootOf(entry.version);
    if (!carrying.includes(root)) continue;
    let s = out.get(root);
    if (!s) {
      s = new Set();
      out.set(root, s);
    }
    s.add(entry.version.author);
  }
  return new Map([...out].map(([root, s]) => [root, [...s]]));
}

/** A key an account revoked, and the revoke's cutoff (unix ms; null: none). */
export interface RevokedKey {
  did: string;
  cutoff: number | null;
}

/**
 * Whether a version a revoked key signed is refused (the profile's "Revocations"): with a cutoff,
 * only one whose `at` is past it (what the key wrote at or before it is vouched for, whenever it
 * arrives: a late copy, a new carrier, the same host after carry:closed); without one, every
 * version not held already. (The key's revoke of itself is never refused: it only repeats it.)
 */
export function refusedAfterRevoke(at: number, cutoff: number | null): boolean {
  return cutoff === null || at > cutoff;
}

/** The plan with every fresh version its root's revoke of its author refuses (`revoked`: root → revoked keys among the authors). */
export function refuseRevoked(plan: AppendPlan, revoked: Map<string, readonly RevokedKey[]>): AppendPlan {
  const refusals = new Map<number, { reason: VersionRefusal; detail: string }>();
  for (const { index, entry } of freshOf(plan)) {
    const r = revoked.get(rootOf(entry.version))?.find((k) => k.did === entry.version.author);
    if (r && refusedAfterRevoke(entry.version.at, r.cutoff) && !isSelfRevoke(entry.version)) {
      refusals.set(index, {
        reason: "revoked",
        detail:
          r.cutoff === null
            ? "the account revoked the key that signed this version"
            : "the account revoked the key that signed this version, and the version is later than the revoke's cutoff",
      });
    }
  }
  return refuseIn(plan, refusals);
}

/** One share of a request's bytes: the accounts that may pay for it, in the order asked. */
export interface Share {
  candidates: string[];
  indexes: number[];
  /** The bytes of each version of `indexes`. */
  sizes: number[];
  versions: number;
  bytes: number;
  /** Revokes, deletions and carry:closed in a carry space: charged past the quota by the overdraft. */
  relief: boolean;
}

/**
 * Step 3, quota: who pays for what. A version is charged to its root's account when that account
 * carries the space here (what an account writes is its share), else to the first carrier with
 * room. The versions `relief` names (revokes, deletions, carry:closed in a carry space) are a
 * share of their own, charged past the quota by the overdraft.
 */
export function sharesOf(plan: AppendPlan, carrying: readonly string[], relief: (v: Version) => boolean = () => false): Share[] {
  const byPayer = new Map<string, Share>();
  for (const { index, entry } of freshOf(plan)) {
    const root = rootOf(entry.version);
    const payer = carrying.includes(root) ? root : "";
    const eased = relief(entry.version);
    const key = `${eased ? "relief" : ""}:${payer}`;
    let s = byPayer.get(key);
    if (!s) {
      s = { candidates: payer !== "" ? [payer] : [...carrying], indexes: [], sizes: [], versions: 0, bytes: 0, relief: eased };
      byPayer.set(key, s);
    }
    s.indexes.push(index);
    s.sizes.push(entry.bytes);
    s.versions++;
    s.bytes += entry.bytes;
  }
  return [...byPayer.values()];
}

/** The plan with each share's versions charged to `payers[i]`. */
export function withPayers(plan: AppendPlan, shares: Share[], payers: string[]): AppendPlan {
  const payerAt = new Map<number, string>();
  shares.forEach((s, i) => {
    for (const index of s.indexes) payerAt.set(index, payers[i]);
  });
  return { entries: plan.entries.map((e, i) => (e.kind === "fresh" && payerAt.has(i) ? { ...e, payer: payerAt.get(i) } : e)) };
}

/** Step 5, the write: the outcome of writing each fresh entry (a seq, and whether this request added it). */
export function afterWrite(plan: AppendPlan, written: Map<number, { seq: number; added: boolean }>): AppendPlan {
  return {
    entries: plan.entries.map((e, i): PlanEntry => {
      const w = written.get(i);
      if (e.kind !== "fresh" || !w) return e;
      return w.added
        ? { kind: "stored", id: e.version.id, seq: w.seq, version: e.version, raw: e.raw, bytes: e.bytes, payer: e.payer! }
        : { kind: "held", id: e.version.id, seq: w.seq };
    }),
  };
}

/** What was charged but not kept (refused after charging, or stored meanwhile by another request): per account, to give back. */
export function refundsOf(
  charged: Array<{ account: string; share: Share }>,
  plan: AppendPlan,
): Array<{ account: string; versions: number; bytes: number }> {
  const out = new Map<string, { account: string; versions: number; bytes: number }>();
  for (const { account, share } of charged) {
    share.indexes.forEach((index, k) => {
      if (plan.entries[index].kind === "stored") return;
      let r = out.get(account);
      if (!r) {
        r = { account, versions: 0, bytes: 0 };
        out.set(account, r);
      }
      r.versions++;
      r.bytes += share.sizes[k];
    });
  }
  return [...out.values()];
}

/** The versions this request added to the log. */
export function storedOf(plan: AppendPlan): Array<Extract<PlanEntry, { kind: "stored" }>> {
  return plan.entries.filter((e): e is Extract<PlanEntry, { kind: "stored" }> => e.kind === "stored");
}

/** The answer: one result per version, in the order sent. Every entry must be settled (none fresh). */
export function answerOf(plan: AppendPlan): VersionResult[] {
  const one = (i: number): VersionResult => {
    const e = plan.entries[i];
    switch (e.kind) {
      case "refused":
        return { ...(e.id ? { id: e.id } : {}), accepted: false, reason: e.reason, detail: e.detail };
      case "held":
      case "stored":
        return { id: e.id, accepted: true, seq: e.seq };
      case "repeat":
        return one(e.of);
      case "fresh":
        throw new Error("an append plan was answered before its write");
    }
  };
  return plan.entries.map((_e, i) => one(i));
}
