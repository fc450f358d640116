// One space a Minca host carries (DESIGN 8.4, seed 002 §4.1-4.2): its constitution, the accounts
// that carry it (with the read key each one's pass proved), and its log of versions. HTTP-only:
// the Worker routes POST/GET .../versions here over RPC. Every decision about bytes (the gates,
// what a carry-space record means, read proofs) is made in shared/minca; this object stores
// what they accept. A version is in SQLite before the answer leaves.
import { DurableObject } from "cloudflare:workers";
import { LazySchema } from "../schema";
import { MIGRATIONS } from "../../migrations/index";
import type { ErrorCode } from "../../shared/errors";
import { MINCA_HOST_LIMITS } from "../../shared/limits";
import { ClientBuckets } from "../../shared/rate-limit";
import { checkReadProof } from "../../shared/minca/read-proof";
import type { Constitution } from "../../shared/minca/space";
import { checkVersion, outsideOf, rootOf, type Version, type VersionRefusal } from "../../shared/minca/version";
import type { Arrival } from "../../shared/minca/wake";
import type { Appended, LogPage, VersionResult } from "../../shared/minca/host-wire";
import { log } from "../../shared/log";
import type { MincaAccount } from "./minca-account";

/** What an RPC call answers: a value, or the HTTP error the Worker turns it into. */
export type HostResult<T> = { ok: true; value: T } | { ok: false; status: number; code: ErrorCode; message: string; retryAfterSeconds?: number };


export interface LogQuery {
  after: number;
  limit: number;
  wait: number;
}

/** A version as it arrived: its raw JSON text and its parsed value. */
export interface Arrived {
  raw: string;
  value: unknown;
  bytes: number;
}

interface Fresh {
  index: number;
  version: Version;
  raw: string;
  bytes: number;
  /** The account its bytes are charged to. */
  payer: string | null;
}

function groupBy<T>(items: T[], key: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const t of items) {
    const k = key(t);
    const g = out.get(k);
    if (g) g.push(t);
    else out.set(k, [t]);
  }
  return out;
}

interface LogRow extends Record<string, SqlStorageValue> {
  seq: number;
  bytes: number;
  version: string;
}

const fail = (status: number, code: ErrorCode, message: string): HostResult<never> => ({ ok: false, status, code, message });

export class MincaSpace extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  /** Made when an account first carries the space: a GET or POST of an unknown space stores nothing. */
  private readonly schema: LazySchema;
  private readonly waiters = new Set<() => void>();
  /** Per-client rates (in memory: an evicted object only forgives an idle client). */
  private readonly buckets = new ClientBuckets({
    write: { burst: MINCA_HOST_LIMITS.write_versions_burst, perSecond: MINCA_HOST_LIMITS.write_versions_per_second },
    read: { burst: MINCA_HOST_LIMITS.read_burst, perSecond: MINCA_HOST_LIMITS.read_per_second },
  });

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.schema = new LazySchema(ctx.storage, MIGRATIONS.MincaSpace);
  }

  // ---- carrying (called by MincaAccount) -------------------------------------------------------

  /** This space is `account`'s carry space (its own machinery). */
  openCarry(space: string, account: string, constitution: Constitution): void {
    this.schema.ensure();
    this.ctx.storage.transactionSync(() => {
      this.setMeta("space", space);
      this.setMeta("constitution", JSON.stringify(constitution));
      this.setMeta("carry_of", account);
    });
  }

  /**
   * `account` carries this space under its current pass, proving `readKey` (private spaces), the
   * space one of the account's own when `own`. The account decides which of its passes is current;
   * no account's pass displaces another's. False (nothing kept) when the space already has
   * max_carriers_per_space other carriers.
   */
  carry(space: string, account: string, constitution: Constitution, readKey: string | null, at: number, own = false): boolean {
    this.schema.ensure();
    return this.ctx.storage.transactionSync(() => {
      const known = this.sql.exec("SELECT 1 FROM carriers WHERE account = ?", account).toArray().length > 0;
      if (!known && this.carriers().length >= MINCA_HOST_LIMITS.max_carriers_per_space) return false;
      this.setMeta("space", space);
      if (this.meta("constitution") === null) this.setMeta("constitution", JSON.stringify(constitution));
      this.sql.exec(
        `INSERT INTO carriers (account, at, read_key, own) VALUES (?, ?, ?, ?)
         ON CONFLICT (account) DO UPDATE SET at = excluded.at, read_key = excluded.read_key, own = excluded.own`,
        account,
        at,
        readKey,
        own ? 1 : 0,
      );
      return true;
    });
  }

  /**
   * A carry space's records of the keys `of` touched (DESIGN 8.4, revocations): for each
   * (collection, key) a version signed by `of` wrote, the latest version of it (by `at`, then
   * seq) signed by none of `revoked`, or null when there is none.
   */
  history(of: string, revoked: string[]): Array<{ collection: string; key: string; version: string | null }> {
    if (this.meta("carry_of") === null) return [];
    const touched = this.sql
      .exec<{ c: string; k: string }>(
        "SELECT DISTINCT json_extract(version, '$.collection') AS c, json_extract(version, '$.key') AS k FROM log WHERE json_extract(version, '$.author') = ?",
        of,
      )
      .toArray();
    return touched.map(({ c, k }) => {
      const row = this.sql
        .exec<{ version: string }>(
          `SELECT version FROM log
            WHERE json_extract(version, '$.collection') = ? AND json_extract(version, '$.key') = ?
              AND json_extract(version, '$.author') NOT IN (SELECT value FROM json_each(?))
            ORDER BY json_extract(version, '$.at') DESC, seq DESC LIMIT 1`,
          c,
          k,
          JSON.stringify(revoked),
        )
        .toArray()[0];
      return { collection: c, key: k, version: row?.version ?? null };
    });
  }

  /** `account` no longer carries this space; with no carrier left, the space is forgotten. */
  uncarry(account: string): void {
    if (!this.schema.exists) return;
    this.sql.exec("DELETE FROM carriers WHERE account = ?", account);
    const left = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM carriers").one().n;
    if (left === 0 && this.meta("carry_of") === null) this.forget();
  }

  /** Deletes every row this space holds. */
  forget(): void {
    if (!this.schema.exists) return;
    this.ctx.storage.transactionSync(() => {
      for (const t of ["log", "carriers", "meta"]) this.sql.exec(`DELETE FROM ${t}`);
      this.sql.exec("DELETE FROM sqlite_sequence WHERE name = 'log'");
    });
    for (const w of this.waiters) w();
  }

  /** Versions and bytes held (for an account's status). */
  usage(): { versions: number; bytes: number } {
    if (!this.schema.exists) return { versions: 0, bytes: 0 };
    return this.sql.exec<{ versions: number; bytes: number }>("SELECT COUNT(*) AS versions, COALESCE(SUM(bytes), 0) AS bytes FROM log").one();
  }

  // ---- the log (called by the Worker) -------------------------------------------------------

  /** Runs each version through the gates and appends the accepted ones (DESIGN 8.2, 8.4). */
  async append(space: string, arrived: Arrived[], opts: { requestHost?: string; client?: string } = {}): Promise<HostResult<Appended>> {
    const constitution = this.constitutionOf(space);
    const carryOf = this.meta("carry_of");
    const carriers = this.carriers();
    if (!constitution || (carryOf === null && carriers.length === 0)) return fail(404, "not_found", "this host does not carry that space");
    // Cheapest first: carried at all (above), then the client's rate, counted in versions (each a
    // signature to verify), before any signature.
    const limited = this.limited("write", opts.client ?? "", arrived.length);
    if (limited) return limited;
    // The account's own spaces (DESIGN 8.4): its carry space, and a space a carrier's pass says is its own.
    const ownMachinery = carryOf !== null || carriers.some((c) => c.own);
    const results: VersionResult[] = [];
    let fresh: Fresh[] = [];
    const first = new Map<string, number>();
    for (const [index, a] of arrived.entries()) {
      const r = await checkVersion(a.value, { space, constitution, ownMachinery }, a.bytes, a.raw);
      if (!r.ok) {
        results.push({ ...(r.id ? { id: r.id } : {}), accepted: false, reason: r.reason, detail: r.detail });
        continue;
      }
      const held = this.sql.exec<{ seq: number }>("SELECT seq FROM log WHERE id = ?", r.version.id).toArray()[0];
      if (held) {
        results.push({ id: r.version.id, accepted: true, seq: held.seq });
        continue;
      }
      if (first.has(r.version.id)) {
        results.push({ id: r.version.id, accepted: true, seq: -1 }); // filled in below
        continue;
      }
      first.set(r.version.id, index);
      results.push({ id: r.version.id, accepted: true, seq: 0 });
      fresh.push({ index, version: r.version, raw: a.raw, bytes: a.bytes, payer: null });
    }
    const refuse = (f: Fresh, reason: VersionRefusal, detail: string) => {
      results[f.index] = { id: f.version.id, accepted: false, reason, detail };
    };
    const finish = () => {
      // A version repeated within the request gets its first copy's answer.
      for (const [i, r] of results.entries()) {
        if (r.accepted && r.seq === -1) results[i] = { ...results[first.get(r.id)!] };
      }
      return { ok: true as const, value: { results } };
    };

    // Revocations (DESIGN 8.4): a version signed by a key its root account revoked is refused in
    // every space the host carries for that account.
    const carrying = carryOf !== null ? [carryOf] : carriers.map((c) => c.account);
    for (const [root, group] of groupBy(fresh, (f) => rootOf(f.version))) {
      if (!carrying.includes(root)) continue;
      const revoked = new Set(await this.account(root).revokedAmong([...new Set(group.map((f) => f.version.author))]));
      for (const f of group) if (revoked.has(f.version.author)) refuse(f, "revoked", "the account revoked the key that signed this version");
    }
    fresh = fresh.filter((f) => results[f.index].accepted);
    if (fresh.length === 0) return finish();

    // Bounds: this space's, then the accounts' (DESIGN 8.4). Each version is charged to one
    // account: its root's when that account carries the space here (what an account writes is
    // its share), else the first carrier with room. An account at its quota is refused only its
    // own share. Each account checks and charges in one step; nothing of the request is stored
    // when over, and what was charged is given back.
    if (this.overSpaceBound(fresh)) return this.spaceFull();
    const charged: Array<{ account: string; versions: number; bytes: number }> = [];
    const refundAll = async (which = charged) => {
      for (const c of which) await this.account(c.account).refund(space, c.versions, c.bytes);
    };
    for (const [root, group] of groupBy(fresh, (f) => (carrying.includes(rootOf(f.version)) ? rootOf(f.version) : ""))) {
      const n = group.length;
      const bytes = group.reduce((b, f) => b + f.bytes, 0);
      const candidates = root !== "" ? [root] : carrying;
      let payer: string | null = null;
      let hostFull = false;
      for (const account of candidates) {
        const charge = await this.account(account).reserve(space, n, bytes);
        if (charge === "ok") {
          payer = account;
          break;
        }
        if (charge === "host_full") hostFull = true;
      }
      if (payer === null) {
        await refundAll();
        // The host-wide total (docs/hosting.md, "Quotas"): no account has room because the host has none.
        if (hostFull) return fail(507, "storage_full", "this host holds all it may for the accounts it carries (storage.host_bytes): nothing was stored");
        return fail(507, "quota_exceeded", `an account's carried spaces hold at most ${MINCA_HOST_LIMITS.max_account_bytes} bytes`);
      }
      charged.push({ account: payer, versions: n, bytes });
      for (const f of group) f.payer = payer;
    }

    // In the carry space, the account's records drive the host: it judges passes and applies them first.
    let closed = false;
    let revokedNow: string[] = [];
    if (carryOf !== null) {
      let applied: Awaited<ReturnType<MincaAccount["applyCarry"]>>;
      try {
        applied = await this.account(carryOf).applyCarry(space, fresh.map((f) => f.version), opts);
      } catch (err) {
        // Nothing of the request is logged; records applied before the failure are applied again,
        // to the same effect, when the request is sent again (docs/hosting.md).
        log.error("minca space: the account could not apply its carry records", { err });
        return fail(503, "unavailable", "the host could not apply these records now: nothing was stored; send them again");
      }
      closed = applied.closed;
      revokedNow = applied.revoked;
      for (const [i, verdict] of applied.verdicts.entries()) if (verdict !== null) refuse(fresh[i], verdict.reason, verdict.detail);
    }
    const stored = fresh.filter((f) => results[f.index].accepted);
    // The space's bound again and the writes in one step (no await between them); a request
    // running alongside may have stored the same version meanwhile: it keeps its first seq.
    const written = this.ctx.storage.transactionSync(() => {
      if (this.overSpaceBound(stored)) return null;
      return stored.map((f) => {
        const seq = this.sql.exec<{ seq: number }>("INSERT INTO log (id, bytes, version) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING seq", f.version.id, f.bytes, f.raw).toArray()[0]?.seq;
        return seq === undefined ? { seq: this.sql.exec<{ seq: number }>("SELECT seq FROM log WHERE id = ?", f.version.id).one().seq, isNew: false } : { seq, isNew: true };
      });
    });
    if (written === null) {
      await refundAll();
      return this.spaceFull();
    }
    stored.forEach((f, i) => (results[f.index] = { id: f.version.id, accepted: true, seq: written[i].seq }));
    // Charged but not kept here (refused by the account, or stored meanwhile by another request): given back.
    const keptIds = new Set(stored.filter((_f, i) => written[i].isNew).map((f) => f.version.id));
    const notKept = fresh.filter((f) => !keptIds.has(f.version.id));
    await refundAll([...groupBy(notKept, (f) => f.payer!)].map(([account, g]) => ({ account, versions: g.length, bytes: g.reduce((b, f) => b + f.bytes, 0) })));
    if (closed) {
      // carry:closed: the account forgot everything; its carry space's log goes too.
      this.forget();
      return finish();
    }
    if (revokedNow.length > 0) await this.account(carryOf!).recount(revokedNow);
    const added = stored.filter((f) => keptIds.has(f.version.id));
    if (added.length > 0) {
      for (const w of this.waiters) w();
      this.waiters.clear();
      // Pushing never delays accepting: the accounts hear of the new versions after the answer.
      const arrivals = added.map((f) => ({ arrival: { ...outsideOf(f.version), root: rootOf(f.version) }, raw: f.raw }));
      if (carryOf === null) this.ctx.waitUntil(this.arrived(space, carrying, arrivals));
    }
    return finish();
  }

  private overSpaceBound(add: Fresh[]): boolean {
    const held = this.usage();
    const bytes = add.reduce((n, f) => n + f.bytes, 0);
    return held.versions + add.length > MINCA_HOST_LIMITS.max_space_versions || held.bytes + bytes > MINCA_HOST_LIMITS.max_space_bytes;
  }

  private spaceFull(): HostResult<never> {
    return fail(507, "quota_exceeded", `a carried space holds at most ${MINCA_HOST_LIMITS.max_space_versions} versions and ${MINCA_HOST_LIMITS.max_space_bytes} bytes`);
  }

  /** After the answer: each carrying account hears of the new versions (wakes, DESIGN 8.5). */
  private async arrived(space: string, accounts: string[], arrivals: Array<{ arrival: Arrival; raw: string }>): Promise<void> {
    await scheduler.wait(0);
    for (const account of accounts) {
      try {
        await this.account(account).arrived(space, arrivals);
      } catch (err) {
        log.error("minca space: telling an account of new versions failed", { err });
      }
    }
  }

  /** A page of the log; a private space's only to a request proven with its read key. */
  async page(
    space: string,
    q: LogQuery,
    proof: { authorization: string | null; time: string | null },
    client = "",
  ): Promise<HostResult<LogPage>> {
    const constitution = this.constitutionOf(space);
    if (!constitution || (this.meta("carry_of") === null && this.carriers().length === 0)) {
      return fail(404, "not_found", "this host does not carry that space");
    }
    // Before the read proof's signature, and for every read (a long-poll included).
    const limited = this.limited("read", client);
    if (limited) return limited;
    if (constitution.visibility === "private") {
      const verdict = checkReadProof(proof, space, this.readKeys(constitution), Math.floor(Date.now() / 1000));
      if (verdict === "missing") return fail(401, "read_proof_required", "a private space's log is answered only to its read key (Authorization: MincaRead)");
      if (verdict === "invalid") return fail(403, "read_proof_invalid", "the read proof does not verify for this space, or its time is off");
    }
    const deadline = Date.now() + q.wait * 1000;
    for (;;) {
      const page = this.readPage(q.after, q.limit);
      const left = deadline - Date.now();
      if (page.items.length > 0 || left <= 0) return { ok: true, value: page };
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, left);
        this.waiters.add(done);
      });
    }
  }

  // ---- internals ------------------------------------------------------------------------------

  /** The client's rate on this space (DESIGN section 3's client address): a 429 with Retry-After when over. */
  private limited(kind: "read" | "write", client: string, n = 1): HostResult<never> | null {
    const wait = this.buckets.take(kind, client, n);
    if (wait === null) return null;
    const what = kind === "write" ? `${MINCA_HOST_LIMITS.write_versions_per_second} versions` : `${MINCA_HOST_LIMITS.read_per_second} reads`;
    return { ok: false, status: 429, code: "rate_limited", message: `too many ${kind}s on this space (about ${what} a second); retry later`, retryAfterSeconds: wait };
  }

  /**
   * Who may read (DESIGN 8.4, the pass rule): a carry space's own read key; else the read key of
   * every carrying account's current pass. A proof under any of them reads: no account's pass
   * displaces another's, and no field a writer chooses (such as `at`) decides between accounts.
   */
  private readKeys(constitution: Constitution): string[] {
    if (this.meta("carry_of") !== null) return [constitution.readKey!];
    const keys = this.sql.exec<{ k: string }>("SELECT DISTINCT COALESCE(read_key, ?) AS k FROM carriers", constitution.readKey ?? "").toArray();
    return keys.map((r) => r.k).filter((k) => k !== "");
  }

  private readPage(after: number, limit: number): LogPage {
    const rows = this.sql.exec<LogRow>("SELECT seq, bytes, version FROM log WHERE seq > ? ORDER BY seq LIMIT ?", after, limit + 1).toArray();
    const items: LogPage["items"] = [];
    let bytes = 0;
    for (const r of rows) {
      if (items.length >= limit) break;
      if (items.length > 0 && bytes + r.bytes > MINCA_HOST_LIMITS.page_max_bytes) break;
      bytes += r.bytes;
      items.push({ seq: r.seq, version: JSON.parse(r.version) });
    }
    const oldest = this.sql.exec<{ s: number | null }>("SELECT MIN(seq) AS s FROM log").one().s;
    return { items, next: items.length ? items[items.length - 1].seq : after, more: rows.length > items.length, oldest_seq: oldest };
  }

  private carriers(): Array<{ account: string; own: boolean }> {
    if (!this.schema.exists) return [];
    return this.sql.exec<{ account: string; own: number }>("SELECT account, own FROM carriers ORDER BY account").toArray().map((r) => ({ account: r.account, own: r.own === 1 }));
  }

  private constitutionOf(space: string): Constitution | null {
    const known = this.meta("space");
    if (known !== null && known !== space) throw new Error(`space ${known} addressed as ${space}`);
    const c = this.meta("constitution");
    return c === null ? null : (JSON.parse(c) as Constitution);
  }

  private account(did: string) {
    return this.env.MINCA_ACCOUNT.get(this.env.MINCA_ACCOUNT.idFromName(did));
  }

  private meta(key: string): string | null {
    if (!this.schema.exists) return null;
    return this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0]?.value ?? null;
  }

  private setMeta(key: string, value: string): void {
    this.sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value);
  }
}
