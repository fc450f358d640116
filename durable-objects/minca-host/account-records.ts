// What an account's carry-space records make its MincaAccount keep (docs/hosting.md, "Connecting a host", "Wakes"): passes
// (through the carried spaces' objects), links (through the mailbox topics they serve), wakes,
// receivers and revoked keys, each set, replaced or dropped as shared/minca/carry reads them, and
// set again after a revoke from the latest version no revoked key signed.
import type { AccountStore } from "./account-store";
import type { MailboxStub, SpaceStub } from "./peers";
import type { VersionRefusal, Version } from "../../shared/minca/version";
import type { RevokedKey } from "../../server/minca/append-plan";
import { MINCA_HOST_LIMITS, MINCA_WAKE_LIMITS } from "../../shared/limits";
import { LINK, PASS, readCarryRecord, RECEIVER, supersedes, WAKE, type CarryRecord, type Written } from "../../shared/minca/carry";
import { endpointPolicyOf } from "../../server/webpush/endpoint";
import type { Settings } from "../base/object-settings";

/** Why a carry-space version was refused, or null when it was taken. */
export type CarryVerdict = { reason: VersionRefusal; detail: string } | null;

/** What the records reach beyond the account's own tables. */
interface AccountPeers {
  /** The relay's settings, parsed (base/object-settings.ts): the push-endpoint rule. */
  settings(): Settings;
  space(id: string): SpaceStub;
  mailbox(topic: string): MailboxStub;
  /** Sets the account's alarm again (a link's expiry changed). */
  schedule(): Promise<void>;
  /** Stores one of the account's own rows through its lease of the host-wide total (account-usage.ts): false, nothing written, when there is no room. */
  storeRow(bytes: number, write: () => void): Promise<boolean>;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

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
    return this.store.revokes.revoke(did, cutoff);
  }

  isRevoked(did: string): boolean {
    return this.revokedKey(did) !== null;
  }

  /** The account's revoke of `did` and its cutoff, or null when the key is not revoked. */
  revokedKey(did: string): RevokedKey | null {
    if (!this.store.schema.exists) return null;
    return this.store.revokes.get(did);
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
    const all = this.store.revokes.withCutoff();
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
        const held = this.store.passes.has(rec.space);
        // A new space is counted, with those whose carry is still awaited, before the await (no
        // await between the count and the reservation): two passes taken alongside cannot both
        // pass the bound.
        const fresh = !held && !this.taking.has(rec.space);
        if (fresh && this.store.passes.count() + this.taking.size >= MINCA_HOST_LIMITS.max_spaces_per_account) {
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
        this.store.passes.put(
          {
            space: rec.space,
            key: v.key,
            at: rec.at,
            visibility: rec.constitution.visibility,
            readKey: rec.readKey ?? null,
            own: rec.own === true,
          },
          v.author,
        );
        return null;
      }
      case "pass_deleted":
        await this.drop(PASS, rec.key);
        return null;
      case "link": {
        const held = this.store.links.get(rec.key);
        // Charged before anything is stored (the link row, and the row its topic's mailbox keeps
        // for a topic the account did not link yet), then the mailbox is asked; refused, the row
        // held before comes back.
        const write = () => this.store.links.put(rec, v.author);
        const grows = this.store.links.growth(rec, account);
        if (!(await this.peers.storeRow(grows, write)))
          return {
            reason: "storage_full",
            detail: "this host holds all it may for the accounts it carries (storage.host_bytes): the link was not stored",
          };
        if (!(await this.peers.mailbox(rec.topic).linkAccount(account))) {
          this.store.links.restore(rec.key, held);
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
        if (!this.store.wakes.has(rec.key) && this.store.wakes.count() >= MINCA_WAKE_LIMITS.max_wakes_per_account) {
          return { reason: "too_many_wakes", detail: `a host keeps at most ${MINCA_WAKE_LIMITS.max_wakes_per_account} wakes per account` };
        }
        this.store.wakes.put(rec.key, v.at, JSON.stringify(rec.wake), v.author);
        return null;
      }
      case "wake_deleted":
        await this.drop(WAKE, rec.key);
        return null;
      case "receiver": {
        // The receiver registry's rules (server/webpush/receivers.ts), as a mailbox's: a receiver
        // the relay may not push to does not count and its version is refused; a recount restores
        // one that was admitted (the endpoint rule is asked again before each push).
        const policy = opts.current ? null : endpointPolicyOf(this.peers.settings(), opts.requestHost);
        const r = this.store.receivers.add(
          {
            key: rec.key,
            at: v.at,
            device: rec.receiver.device,
            endpoint: rec.receiver.push.endpoint,
            p256dh: rec.receiver.push.keys.p256dh,
            auth: rec.receiver.push.keys.auth,
          },
          policy,
          v.author,
        );
        if (r.ok) return null;
        return { reason: r.code === "invalid_endpoint" ? "invalid_receiver" : "too_many_receivers", detail: r.detail };
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
        const space = this.store.passes.spaceOf(key);
        if (space === undefined) return;
        const usage = this.store.passes.usageOf(space);
        if ((await this.peers.space(space).uncarry(account, usage, { keepLast: opts.byRevoke === true })) === "kept") return;
        this.store.passes.delete(space);
        return;
      }
      case LINK: {
        const topic = this.store.links.delete(key);
        if (topic !== undefined) await this.unlinkIfNone(topic);
        return;
      }
      case WAKE:
        this.store.wakes.delete(key);
        return;
      case RECEIVER:
        this.store.receivers.delete(key);
        return;
    }
  }

  // ---- links ----------------------------------------------------------------------------------

  /** Links whose `until` passed go, and the topics left with none stop serving the account. */
  async expireLinks(): Promise<void> {
    for (const topic of this.store.links.expire(nowSeconds())) await this.unlinkIfNone(topic);
  }

  /** Keeps at most max_links_per_account links: the least recently written go first. */
  private async evictLinks(): Promise<void> {
    for (const topic of this.store.links.evict(MINCA_HOST_LIMITS.max_links_per_account)) await this.unlinkIfNone(topic);
  }

  private async unlinkIfNone(topic: string): Promise<void> {
    if (this.store.links.countOf(topic) === 0) await this.peers.mailbox(topic).unlinkAccount(this.account());
  }
}
