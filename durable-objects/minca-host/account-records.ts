// What an account's carry-space records make its MincaAccount keep (docs/hosting.md, "Connecting a host", "Wakes"): passes
// (through the carried spaces' objects), links (through the mailbox topics they serve), wakes,
// receivers and revoked keys, each set, replaced or dropped as shared/minca/carry reads them, and
// set again after a revoke from the latest version no revoked key signed.
import { toArrayBuffer } from "../../shared/encoding";
import type { AccountStore } from "./account-store";
import type { MailboxStub, SpaceStub } from "./peers";
import type { VersionRefusal, Version } from "../../shared/minca/version";
import type { RevokedKey } from "../../shared/minca/append-plan";
import { MINCA_HOST_LIMITS, MINCA_WAKE_LIMITS, WEBPUSH_LIMITS } from "../../shared/limits";
import { rowBytes } from "../../shared/storage";
import {
  LINK,
  PASS,
  readCarryRecord,
  RECEIVER,
  strictestCutoff,
  supersedes,
  WAKE,
  type CarryRecord,
  type Written,
} from "../../shared/minca/carry";
import { checkPushEndpoint, endpointPolicy, exceedsPushOrigins } from "../../shared/webpush/endpoint";

/** Why a carry-space version was refused, or null when it was taken. */
export type CarryVerdict = { reason: VersionRefusal; detail: string } | null;

/** What the records reach beyond the account's own tables. */
export interface AccountPeers {
  env: Env;
  space(id: string): SpaceStub;
  mailbox(topic: string): MailboxStub;
  /** Sets the account's alarm again (a link's expiry changed). */
  schedule(): Promise<void>;
  /** Stores one of the account's own rows through its lease of the host-wide total (account-usage.ts): false, nothing written, when there is no room. */
  storeRow(bytes: number, write: () => void): Promise<boolean>;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

interface LinkRow extends Record<string, SqlStorageValue> {
  key: string;
  topic: string;
  blob: ArrayBuffer;
  until: number;
  at: number;
  written: number;
  author: string | null;
}

export class AccountRecords {
  /** New spaces whose pass is being taken (their carry awaited): they count toward max_spaces_per_account. */
  private readonly taking = new Set<string>();

  constructor(
    private readonly store: AccountStore,
    private readonly peers: AccountPeers,
  ) {}

  private get sql(): SqlStorage {
    return this.store.sql;
  }

  private account(): string {
    return this.store.account();
  }

  // ---- revocations ----------------------------------------------------------------------------

  /**
   * A revoke, kept for good (a deleted or rewritten revoke record takes nothing back), and never
   * refused for the number the account holds: revokes count against its bytes only. A key revoked
   * again keeps the stricter cutoff. The cutoff now in force (null: none).
   */
  revoke(did: string, cutoff: number | null): number | null {
    const held = this.sql.exec<{ cutoff: number | null }>("SELECT cutoff FROM revoked WHERE did = ?", did).toArray()[0];
    const now = held ? strictestCutoff(held.cutoff, cutoff) : cutoff;
    this.sql.exec(
      "INSERT INTO revoked (did, at, cutoff) VALUES (?, ?, ?) ON CONFLICT (did) DO UPDATE SET cutoff = excluded.cutoff",
      did,
      Date.now(),
      now,
    );
    return now;
  }

  isRevoked(did: string): boolean {
    return this.revokedKey(did) !== null;
  }

  /** The account's revoke of `did` and its cutoff, or null when the key is not revoked. */
  revokedKey(did: string): RevokedKey | null {
    if (!this.store.schema.exists) return null;
    const row = this.sql.exec<{ cutoff: number | null }>("SELECT cutoff FROM revoked WHERE did = ?", did).toArray()[0];
    return row ? { did, cutoff: row.cutoff } : null;
  }

  /**
   * After revokes with a cutoff were stored: what each such key wrote in the carry space after its
   * cutoff stops counting. Each record it wrote after the cutoff is set again from its latest
   * version that still counts, or dropped when there is none. What the key wrote at or before
   * the cutoff, and what any revoke without a cutoff names, keeps counting; what was stored stays
   * in the log; a pass that is its space's last carrier keeps carrying it (a revoke never drops a
   * log).
   */
  async recount(carry: string, bodyKey: Uint8Array, revoked: string[]): Promise<void> {
    const all = this.sql.exec<{ did: string; cutoff: number | null }>("SELECT did, cutoff FROM revoked WHERE cutoff IS NOT NULL").toArray();
    for (const did of revoked) {
      const cutoff = all.find((r) => r.did === did)?.cutoff ?? null;
      if (cutoff === null) continue;
      for (const h of await this.peers.space(carry).history(did, cutoff, all)) {
        if (h.version === null) {
          await this.drop(h.collection, h.key, { byRevoke: true });
          // Nothing of the record counts: any version that arrives later may set it again.
          this.sql.exec("DELETE FROM latest WHERE collection = ? AND key = ?", h.collection, h.key);
          continue;
        }
        const v = JSON.parse(h.version) as Version;
        const rec = readCarryRecord(v, bodyKey);
        if (rec.kind === "closed" || rec.kind === "revoke" || rec.kind === "refused") continue;
        if ((await this.keep(rec, v, { current: true })) !== null) await this.drop(h.collection, h.key, { byRevoke: true });
      }
    }
  }

  // ---- which version counts -------------------------------------------------------------------

  /** The latest version the host took for a record key (a deletion included), if any. */
  private latest(collection: string, key: string): Written | undefined {
    return this.sql
      .exec<{ at: number; id: string }>("SELECT at, id FROM latest WHERE collection = ? AND key = ?", collection, key)
      .toArray()[0];
  }

  private setLatest(v: Version): void {
    this.sql.exec(
      "INSERT INTO latest (collection, key, at, id) VALUES (?, ?, ?, ?) ON CONFLICT (collection, key) DO UPDATE SET at = excluded.at, id = excluded.id",
      v.collection,
      v.key,
      v.at,
      v.id,
    );
  }

  // ---- keeping a record -----------------------------------------------------------------------

  /**
   * Keeps what one carry-space record says, with the key that signed it. Per record key, last
   * writer wins by (`at`, version id), deletions included (shared/minca/carry `supersedes`): an
   * older version is accepted and changes nothing. With `current` (a recount after a revoke),
   * this version is the one that counts now, whatever its place.
   */
  async keep(rec: CarryRecord, v: Version, opts: { requestHost?: string; current: boolean }): Promise<CarryVerdict> {
    if (rec.kind === "refused") return { reason: rec.reason, detail: rec.detail };
    if (rec.kind === "other" || rec.kind === "closed" || rec.kind === "revoke") return null;
    if (!opts.current && !supersedes(this.latest(v.collection, v.key), v)) return null;
    const verdict = await this.apply(rec, v, opts);
    if (verdict === null) this.setLatest(v);
    return verdict;
  }

  /** Keeps what a record that supersedes the one held says. */
  private async apply(rec: CarryRecord, v: Version, opts: { requestHost?: string; current: boolean }): Promise<CarryVerdict> {
    const account = this.account();
    switch (rec.kind) {
      case "refused":
        return { reason: rec.reason, detail: rec.detail };
      case "pass": {
        const held = this.sql.exec<{ at: number }>("SELECT at FROM passes WHERE space = ?", rec.space).toArray()[0];
        // A new space is counted, with those whose carry is still awaited, before the await (no
        // await between the count and the reservation): two passes taken alongside cannot both
        // pass the bound.
        const fresh = !held && !this.taking.has(rec.space);
        if (fresh && this.store.count("passes") + this.taking.size >= MINCA_HOST_LIMITS.max_spaces_per_account) {
          return {
            reason: "too_many_spaces",
            detail: `a host carries at most ${MINCA_HOST_LIMITS.max_spaces_per_account} spaces per account`,
          };
        }
        if (fresh) this.taking.add(rec.space);
        let carried: boolean;
        try {
          carried = await this.peers.space(rec.space).carry(account, rec.constitution, rec.readKey ?? null, rec.at, rec.own);
        } finally {
          if (fresh) this.taking.delete(rec.space);
        }
        if (!carried) {
          return {
            reason: "too_many_carriers",
            detail: `a host lets at most ${MINCA_HOST_LIMITS.max_carriers_per_space} accounts carry one space`,
          };
        }
        this.sql.exec(
          `INSERT INTO passes (space, key, at, visibility, read_key, author, own) VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (space) DO UPDATE SET at = excluded.at, read_key = excluded.read_key, author = excluded.author, own = excluded.own`,
          rec.space,
          v.key,
          rec.at,
          rec.constitution.visibility,
          rec.readKey ?? null,
          v.author,
          rec.own ? 1 : 0,
        );
        return null;
      }
      case "pass_deleted":
        await this.drop(PASS, rec.key);
        return null;
      case "link": {
        const held = this.sql.exec<LinkRow>("SELECT * FROM links WHERE key = ?", rec.key).toArray()[0];
        // Charged before anything is stored (the link row, and the row its topic's mailbox keeps
        // for a topic the account did not link yet), then the mailbox is asked; refused, the row
        // held before comes back.
        const write = () =>
          this.sql.exec(
            `INSERT INTO links (key, topic, blob, until, at, written, author) VALUES (?, ?, ?, ?, ?, (SELECT COALESCE(MAX(written), 0) + 1 FROM links), ?)
             ON CONFLICT (key) DO UPDATE SET topic = excluded.topic, blob = excluded.blob, until = excluded.until, at = excluded.at, written = excluded.written, author = excluded.author`,
            rec.key,
            rec.topic,
            toArrayBuffer(rec.blob),
            rec.until,
            rec.at,
            v.author,
          );
        const grows = rowBytes(rec.key.length + rec.topic.length + rec.blob.length) + rowBytes(this.account().length);
        if (!(await this.peers.storeRow(grows, write)))
          return {
            reason: "storage_full",
            detail: "this host holds all it may for the accounts it carries (storage.host_bytes): the link was not stored",
          };
        if (!(await this.peers.mailbox(rec.topic).linkAccount(account))) {
          this.restoreLink(rec.key, held);
          return {
            reason: "too_many_link_accounts",
            detail: `a mailbox topic serves the links of at most ${MINCA_HOST_LIMITS.max_link_accounts_per_topic} accounts`,
          };
        }
        if (held && held.topic !== rec.topic) await this.unlinkIfNone(held.topic);
        await this.evictLinks();
        await this.peers.schedule();
        return null;
      }
      case "link_deleted":
        await this.drop(LINK, rec.key);
        return null;
      case "wake": {
        const held = this.sql.exec<{ at: number }>("SELECT at FROM wakes WHERE key = ?", rec.key).toArray()[0];
        if (!held && this.store.count("wakes") >= MINCA_WAKE_LIMITS.max_wakes_per_account) {
          return { reason: "too_many_wakes", detail: `a host keeps at most ${MINCA_WAKE_LIMITS.max_wakes_per_account} wakes per account` };
        }
        this.sql.exec(
          "INSERT INTO wakes (key, at, body, author) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET at = excluded.at, body = excluded.body, author = excluded.author",
          rec.key,
          v.at,
          JSON.stringify(rec.wake),
          v.author,
        );
        return null;
      }
      case "wake_deleted":
        await this.drop(WAKE, rec.key);
        return null;
      case "receiver": {
        const endpoint = rec.receiver.push.endpoint;
        // The mailbox's push-endpoint rule: a receiver the relay may not push to does not count, and
        // its version is refused (a recount sets again one that was accepted).
        const rule = opts.current ? ({ ok: true } as const) : checkPushEndpoint(endpoint, endpointPolicy(this.peers.env, opts.requestHost));
        if (!rule.ok) return { reason: "invalid_receiver", detail: rule.reason };
        const held = this.sql.exec<{ at: number }>("SELECT at FROM receivers WHERE key = ?", rec.key).toArray()[0];
        if (!held && this.store.count("receivers") >= MINCA_WAKE_LIMITS.max_receivers_per_account) {
          return {
            reason: "too_many_receivers",
            detail: `a host keeps at most ${MINCA_WAKE_LIMITS.max_receivers_per_account} receivers per account`,
          };
        }
        // At most max_push_origins_per_topic push origins among the account's live receivers.
        const others = this.sql.exec<{ endpoint: string }>("SELECT endpoint FROM receivers WHERE key != ? AND gone = 0", rec.key).toArray();
        const max = WEBPUSH_LIMITS.max_push_origins_per_topic;
        if (
          !opts.current &&
          exceedsPushOrigins(
            others.map((r) => r.endpoint),
            endpoint,
            max,
          )
        ) {
          return { reason: "too_many_receivers", detail: `an account's receivers are at most ${max} push origins (registrable domains)` };
        }
        // Written again: a receiver its push service had said was gone is pushed to again.
        this.sql.exec(
          `INSERT INTO receivers (key, at, device, endpoint, p256dh, auth, gone, author) VALUES (?, ?, ?, ?, ?, ?, 0, ?)
             ON CONFLICT (key) DO UPDATE SET at = excluded.at, device = excluded.device, endpoint = excluded.endpoint,
               p256dh = excluded.p256dh, auth = excluded.auth, gone = 0, author = excluded.author`,
          rec.key,
          v.at,
          rec.receiver.device,
          endpoint,
          rec.receiver.push.keys.p256dh,
          rec.receiver.push.keys.auth,
          v.author,
        );
        return null;
      }
      case "receiver_deleted":
        await this.drop(RECEIVER, rec.key);
        return null;
      default:
        return null;
    }
  }

  /**
   * The record `collection`/`key` no longer counts: what the host kept for it goes. A pass that
   * goes hands the bytes the account was charged for its space to another account that still
   * carries it; with `byRevoke`, a pass that is its space's last carrier stays (a revoke never
   * drops a log).
   */
  private async drop(collection: string, key: string, opts: { byRevoke?: boolean } = {}): Promise<void> {
    const account = this.account();
    switch (collection) {
      case PASS: {
        const held = this.sql.exec<{ space: string }>("SELECT space FROM passes WHERE key = ?", key).toArray()[0];
        if (!held) return;
        const usage = this.sql
          .exec<{ versions: number; bytes: number }>("SELECT versions, bytes FROM usage WHERE space = ?", held.space)
          .toArray()[0] ?? { versions: 0, bytes: 0 };
        if ((await this.peers.space(held.space).uncarry(account, usage, { keepLast: opts.byRevoke === true })) === "kept") return;
        this.sql.exec("DELETE FROM passes WHERE space = ?", held.space);
        this.sql.exec("DELETE FROM usage WHERE space = ?", held.space);
        return;
      }
      case LINK: {
        const held = this.sql.exec<{ topic: string }>("SELECT topic FROM links WHERE key = ?", key).toArray()[0];
        if (!held) return;
        this.sql.exec("DELETE FROM links WHERE key = ?", key);
        await this.unlinkIfNone(held.topic);
        return;
      }
      case WAKE:
        this.sql.exec("DELETE FROM wakes WHERE key = ?", key);
        return;
      case RECEIVER:
        if (this.sql.exec("DELETE FROM receivers WHERE key = ?", key).rowsWritten > 0)
          this.sql.exec("DELETE FROM pushes WHERE receiver = ?", key);
        return;
    }
  }

  // ---- links ----------------------------------------------------------------------------------

  /** A link row as it was before a write its mailbox refused (none: the row goes). */
  private restoreLink(key: string, held: LinkRow | undefined): void {
    this.sql.exec("DELETE FROM links WHERE key = ?", key);
    if (held)
      this.sql.exec(
        "INSERT INTO links (key, topic, blob, until, at, written, author) VALUES (?, ?, ?, ?, ?, ?, ?)",
        held.key,
        held.topic,
        held.blob,
        held.until,
        held.at,
        held.written,
        held.author,
      );
  }

  /** Links whose `until` passed go, and the topics left with none stop serving the account. */
  async expireLinks(): Promise<void> {
    const expired = this.sql.exec<{ key: string; topic: string }>("SELECT key, topic FROM links WHERE until <= ?", nowSeconds()).toArray();
    this.sql.exec("DELETE FROM links WHERE until <= ?", nowSeconds());
    for (const topic of new Set(expired.map((e) => e.topic))) await this.unlinkIfNone(topic);
  }

  /** Keeps at most max_links_per_account links: the least recently written go first. */
  private async evictLinks(): Promise<void> {
    const over = this.sql
      .exec<{ key: string; topic: string }>(
        "SELECT key, topic FROM links ORDER BY written DESC LIMIT -1 OFFSET ?",
        MINCA_HOST_LIMITS.max_links_per_account,
      )
      .toArray();
    for (const o of over) this.sql.exec("DELETE FROM links WHERE key = ?", o.key);
    for (const topic of new Set(over.map((o) => o.topic))) await this.unlinkIfNone(topic);
  }

  private async unlinkIfNone(topic: string): Promise<void> {
    const left = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM links WHERE topic = ?", topic).one().n;
    if (left === 0) await this.peers.mailbox(topic).unlinkAccount(this.account());
  }
}
