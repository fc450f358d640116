// What a device reads back from an account's carry space at one host (docs/hosting.md,
// "Revocations", "Moving an account"): every version in it, the latest version of each record
// that still counts (last writer wins by `at`, then version id; a revoked key's versions after
// its cutoff do not count), the account's revokes (the strictest cutoff per key, from every
// revoke record, whoever wrote it) and its live passes. Reads only.
import { base64urlDecode } from "../../shared/encoding";
import {
  CLOSED_KEY,
  PASS,
  passBodySchema,
  REVOKE,
  revokeBodySchema,
  strictestCutoff,
  supersedes,
  type PassBody,
  type RevokeBody,
} from "../../shared/minca/carry";
import { bodyKeyOf, spaceId, type Constitution } from "../../shared/minca/space";
import { versionBody, type Version } from "../../shared/minca/version";

/** A space the account's pass names, as a device can read it back (no space key: the read seed only). */
export interface PassedSpace {
  id: string;
  constitution: Constitution;
  /** A private space's read seed (what a read proof is made with). */
  readSeed?: Uint8Array;
  own: boolean;
  body: PassBody;
}

export interface CarryState {
  /** Every version of the carry space, in log order. */
  versions: Version[];
  /** Per record ("collection key"), the latest version that counts (a deletion included). */
  latest: Map<string, Version>;
  revokes: RevokeBody[];
  passes: PassedSpace[];
}

/** The latest known revoke of each key, the strictest cutoff kept (a revoke is never undone). */
export function mergeRevokes(into: RevokeBody[], more: readonly RevokeBody[]): RevokeBody[] {
  for (const r of more) {
    const held = into.find((h) => h.key === r.key);
    if (!held) {
      into.push({ ...r });
      continue;
    }
    const cutoff = strictestCutoff(held.cutoff ?? null, r.cutoff ?? null);
    if (cutoff === null) delete held.cutoff;
    else held.cutoff = cutoff;
  }
  return into;
}

/** Whether `held` already says all `r` says: the same key, with a cutoff as strict or stricter. */
export function revokeHeld(held: readonly RevokeBody[], r: RevokeBody): boolean {
  return held.some(
    (h) => h.key === r.key && (h.cutoff === undefined ? r.cutoff === undefined : r.cutoff === undefined || h.cutoff <= r.cutoff),
  );
}

/** Reads the carry space's versions (opened with its key `carryKey`) into what they say. */
export function carryStateOf(versions: Version[], carryKey: Uint8Array): CarryState {
  const bodyKey = bodyKeyOf(carryKey);
  const revokes: RevokeBody[] = [];
  for (const v of versions) {
    if (v.collection !== REVOKE || v.deleted) continue;
    const r = revokeBodySchema.safeParse(versionBody(v, bodyKey));
    if (r.success) mergeRevokes(revokes, [r.data]);
  }
  const counts = (v: Version) => {
    const r = revokes.find((x) => x.key === v.author);
    return !r || (r.cutoff !== undefined && v.at <= r.cutoff);
  };
  const latest = new Map<string, Version>();
  for (const v of versions) {
    if (!counts(v)) continue;
    const k = `${v.collection} ${v.key}`;
    if (supersedes(latest.get(k), v)) latest.set(k, v);
  }
  const passes: PassedSpace[] = [];
  for (const v of latest.values()) {
    if (v.collection !== PASS || v.key === CLOSED_KEY || v.deleted) continue;
    const p = passBodySchema.safeParse(versionBody(v, bodyKey));
    if (!p.success) continue;
    passes.push({
      id: spaceId(p.data.constitution),
      constitution: p.data.constitution,
      ...(p.data.readSeed !== undefined ? { readSeed: base64urlDecode(p.data.readSeed) } : {}),
      own: p.data.own === true,
      body: p.data,
    });
  }
  return { versions, latest, revokes, passes };
}
