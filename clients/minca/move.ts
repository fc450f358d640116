// Moving an account between hosts (docs/hosting.md, "Moving an account"): connect the new host,
// copy the carry space (revokes first: the new host then refuses a signed-out key from the
// start) and every carried space's log, check by version id that the new host holds every
// version the old one held, and only then close at the old host (passes deleted first, then
// carry:closed). A dry run reads the old host and writes nothing anywhere.
import { CLOSED_KEY, isSelfRevoke, LINK, PASS, passKey, REVOKE } from "../../shared/minca/carry";
import { MINCA_HOST_LIMITS } from "../../shared/limits";
import { bodyKeyOf } from "../../shared/minca/space";
import { versionBody, type Version } from "../../shared/minca/version";
import { HostError, writeVersion, type HostConnection } from "./host";
import type { PassedSpace } from "./carry-state";

export type MoveStep = "read" | "connect" | "carry" | "space" | "check" | "close" | "done";

export interface MoveProgress {
  step: MoveStep;
  /** The space this step works on, if one. */
  space?: string;
  /** Versions (or records) done of `total`. */
  done?: number;
  total?: number;
  message: string;
}

export interface MoveReport {
  dryRun: boolean;
  /** The account's revokes copied (or, in a dry run, to copy). */
  revokes: number;
  /** Carry-space records written again at the new host (passes, links, wakes, receivers). */
  records: number;
  spaces: Array<{ id: string; versions: number; bytes: number }>;
  /** Whether the old host was closed. */
  closed: boolean;
}

export class MoveError extends Error {
  constructor(
    message: string,
    readonly missing: Array<{ space: string; ids: string[] }>,
  ) {
    super(message);
  }
}

/** Posts `versions` in batches; answers the ids refused with their reasons. */
async function postAll(conn: HostConnection, space: string, versions: Version[], onBatch: (n: number) => void): Promise<string[]> {
  const refused: string[] = [];
  for (let i = 0; i < versions.length; i += MINCA_HOST_LIMITS.max_versions_per_request) {
    const batch = versions.slice(i, i + MINCA_HOST_LIMITS.max_versions_per_request);
    const results = await conn.post(space, batch);
    results.forEach((r, k) => {
      if (!r.accepted) refused.push(`${batch[k].id} (${r.reason})`);
    });
    onBatch(i + batch.length);
  }
  return refused;
}

/**
 * Moves the account `from` one host `to` another. `from` and `to` are connections of one device of
 * the account (a session whose note grants /account/write); `from` need not have connected in this
 * process (its carry space for `fromGen` is derived). Throws MoveError, leaving the old host as it
 * was, when the new host does not hold every version the old one held.
 */
export async function moveAccount(
  from: HostConnection,
  to: HostConnection,
  opts: {
    fromGen?: number;
    gen?: number;
    name?: string;
    admission?: string;
    dryRun?: boolean;
    onProgress?: (p: MoveProgress) => void;
  } = {},
): Promise<MoveReport> {
  const say = opts.onProgress ?? (() => undefined);
  if (!from.carry) await from.attach(opts.fromGen ?? 0);
  say({ step: "read", message: "reading the carry space at the old host" });
  const state = await from.readCarry();
  await from.learnRevokes();
  const logs: Array<{ pass: PassedSpace; versions: Version[] }> = [];
  for (const pass of state.passes) {
    const versions = await from.readLog(pass.id, pass.readSeed);
    logs.push({ pass, versions });
    say({
      step: "read",
      space: pass.id,
      done: versions.length,
      total: versions.length,
      message: `read ${versions.length} versions of ${pass.id}`,
    });
  }
  const bodyKey = bodyKeyOf(from.carry!.key!);
  const now = Math.floor(Date.now() / 1000);
  // The records that count at the old host, written again by this device at the new one (a
  // carry space's versions name it and are sealed with its key: they cannot travel as they are).
  const records = [...state.latest.values()].filter((v) => {
    if (v.deleted || v.collection === REVOKE || (v.collection === PASS && v.key === CLOSED_KEY)) return false;
    if (v.collection === PASS) return false; // passes come from state.passes (checked), below
    if (v.collection === LINK) return ((versionBody(v, bodyKey) as { until?: number } | null)?.until ?? 0) > now;
    return versionBody(v, bodyKey) !== null;
  });
  const report: MoveReport = {
    dryRun: opts.dryRun === true,
    revokes: (from.account.revoked ?? []).length,
    records: records.length + state.passes.length,
    spaces: logs.map((l) => ({
      id: l.pass.id,
      versions: l.versions.length,
      bytes: l.versions.reduce((n, v) => n + JSON.stringify(v).length, 0),
    })),
    closed: false,
  };
  if (opts.dryRun) {
    say({ step: "done", message: "dry run: nothing was written at either host" });
    return report;
  }

  say({ step: "connect", message: "connecting the new host (the account's revokes are copied first)" });
  await to.connect(opts.gen ?? 0, opts.name, { admission: opts.admission });
  const carry = to.carry!;
  say({ step: "carry", done: 0, total: report.records, message: "copying the carry space's records" });
  const rewritten: Version[] = [];
  for (const p of state.passes)
    rewritten.push(await writeVersion(to.account, carry, { collection: PASS, key: passKey(p.id), body: p.body }));
  for (const v of records)
    rewritten.push(
      await writeVersion(to.account, carry, { collection: v.collection, key: v.key, topics: v.topics, body: versionBody(v, bodyKey)! }),
    );
  const refusedRecords = await postAll(to, carry.id, rewritten, (n) =>
    say({ step: "carry", done: n, total: rewritten.length, message: `copied ${n} of ${rewritten.length} carry-space records` }),
  );
  if (refusedRecords.length > 0)
    throw new MoveError(`the new host refused carry-space records: ${refusedRecords.join(", ")}; the old host was left as it was`, []);

  for (const { pass, versions } of logs) {
    await postAll(to, pass.id, versions, (n) =>
      say({
        step: "space",
        space: pass.id,
        done: n,
        total: versions.length,
        message: `copied ${n} of ${versions.length} versions of ${pass.id}`,
      }),
    );
  }

  say({ step: "check", message: "checking that the new host holds every version the old one held" });
  // Every version that counts: a signed-out key's after its cutoff counts nowhere (its revoke of itself does).
  const revoked = from.account.revoked ?? [];
  const counts = (v: Version) => {
    const r = revoked.find((x) => x.key === v.author);
    return !r || (r.cutoff !== undefined && v.at <= r.cutoff) || isSelfRevoke(v);
  };
  const missing: Array<{ space: string; ids: string[] }> = [];
  for (const { pass, versions } of logs) {
    const held = new Set((await to.readLog(pass.id, pass.readSeed)).map((v) => v.id));
    const lost = versions.filter((v) => counts(v) && !held.has(v.id)).map((v) => v.id);
    if (lost.length > 0) missing.push({ space: pass.id, ids: lost });
  }
  const newState = await to.readCarry();
  const lostRecords = rewritten.map((v) => `${v.collection} ${v.key}`).filter((k) => !newState.latest.has(k));
  if (lostRecords.length > 0) missing.push({ space: carry.id, ids: lostRecords });
  if (missing.length > 0) {
    const n = missing.reduce((k, m) => k + m.ids.length, 0);
    throw new MoveError(`the new host does not hold ${n} of the versions the old one held; the old host was left as it was`, missing);
  }

  say({ step: "close", message: "closing at the old host (passes deleted first, then carry:closed)" });
  const closed = await from.close();
  if (!closed.accepted) throw new HostError(200, closed.reason, "the old host refused carry:closed; everything is at the new host too");
  report.closed = true;
  say({ step: "done", message: "moved" });
  return report;
}
