// Signing out (the Minca protocol §1.2, §2.10; docs/hosting.md, "Revocations"): a session revokes
// its own key in every space it writes in, its carry spaces at every host, the contacts space and
// the account registry, with a cutoff at the latest `at` it wrote — remembered (the account's
// `wroteUntil`), or read back from the hosts when the device does not remember it — and the
// device then forgets the key.
import { REVOKE, revokeKey, type RevokeBody } from "../../shared/minca/carry";
import type { Space } from "../../shared/minca/space";
import type { Version } from "../../shared/minca/version";
import { writeVersion, type MincaAccount } from "./account";
import type { CarryState } from "./carry-state";
import { HostError, type VersionResult } from "./host-error";

/** What signing out needs of a host connection (HostConnection is one). */
interface SignOutHost {
  readonly account: MincaAccount;
  carry: Space | undefined;
  readCarry(): Promise<CarryState>;
  readLog(id: string, readSeed?: Uint8Array): Promise<Version[]>;
  post(space: string, versions: unknown[]): Promise<VersionResult[]>;
  revoke(did: string, opts?: { cutoff?: number }): Promise<VersionResult>;
}

export interface SignOutResult<H extends SignOutHost = SignOutHost> {
  /** Every carry space took the revoke. */
  accepted: boolean;
  /** The first refusal, if any. */
  reason?: string;
  /** The cutoff the revokes carry (unix ms). */
  cutoff: number;
  /** Each revoke written: the host, the space, and its answer. */
  results: Array<{ host: H; space: string; result: VersionResult }>;
}

/** A space the key's revoke is written in, at one host. */
interface Target<H extends SignOutHost> {
  conn: H;
  space: Space;
  /** The host may not carry it (a space this device wrote in that no pass here names): a 404 is no failure. */
  maybe: boolean;
}

/**
 * Signs the account's session out at every host in `conns` (each connected: its carry space
 * known). `spaces`: spaces this device writes in that it has not written in during this process
 * (a private space's revoke is sealed with its key: the registry and contacts spaces, say).
 */
export async function signOutEverywhere<H extends SignOutHost>(conns: H[], opts: { spaces?: Space[] } = {}): Promise<SignOutResult<H>> {
  if (conns.length === 0) throw new Error("sign out at one host at least");
  const account = conns[0].account;
  if (account.signedOut) throw new Error("this session signed out already");
  const did = account.session.did;
  const known = new Map<string, Space>();
  for (const s of [...Object.values(account.writesIn ?? {}), ...(opts.spaces ?? [])]) known.set(s.id, s);

  // What the key wrote, read back at every host: the cutoff when not remembered, and the spaces it writes in.
  let found: number | undefined;
  const saw = (at: number) => {
    found = Math.max(found ?? 0, at);
  };
  const targets: Target<H>[] = [];
  for (const conn of conns) {
    const state = await conn.readCarry();
    for (const v of state.versions) if (v.author === did) saw(v.at);
    const passed = new Set<string>();
    for (const p of state.passes) {
      passed.add(p.id);
      const mine = (await conn.readLog(p.id, p.readSeed)).filter((v) => v.author === did);
      for (const v of mine) saw(v.at);
      const space = known.get(p.id) ?? (p.constitution.visibility === "public" ? { id: p.id, constitution: p.constitution } : undefined);
      if (space && (mine.length > 0 || p.own || known.has(p.id))) targets.push({ conn, space, maybe: false });
    }
    for (const space of known.values()) if (!passed.has(space.id)) targets.push({ conn, space, maybe: true });
  }
  // Remembered, else read back; a key that wrote nothing any host holds vouches for everything
  // up to now (the safe side: nothing it wrote that a device still holds is lost).
  const cutoff = account.wroteUntil ?? found ?? Date.now();
  const body: RevokeBody = { v: 1, key: did, cutoff };

  const results: SignOutResult<H>["results"] = [];
  for (const t of targets) {
    const v = await writeVersion(account, t.space, { collection: REVOKE, key: revokeKey(did), body: { ...body } });
    try {
      results.push({ host: t.conn, space: t.space.id, result: (await t.conn.post(t.space.id, [v]))[0] });
    } catch (err) {
      if (!(t.maybe && err instanceof HostError && err.status === 404)) throw err;
    }
  }
  // The carry spaces last: once a host stores the revoke, the key's later versions are refused there.
  let refused: string | undefined;
  for (const conn of conns) {
    const result = await conn.revoke(did, { cutoff });
    results.push({ host: conn, space: conn.carry!.id, result });
    if (!result.accepted) refused ??= result.reason;
  }
  // The device forgets the key: it signs nothing more.
  account.signedOut = true;
  return { accepted: refused === undefined, ...(refused !== undefined ? { reason: refused } : {}), cutoff, results };
}
