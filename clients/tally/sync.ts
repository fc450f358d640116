// The client's sync engine (seed 003 sections 12 and 13): ledger recovery from friends, the
// remote allowance for unknown peers, and the self-mesh that keeps a user's devices converged
// (initial self-sync, live broadcast, relay fallback). Decisions about entries are in
// shared/tally/ledger.ts; this is the state machine around them.
import {
  SYNC_DATA,
  SYNC_HELLO,
  acceptableEntries,
  chunkEntries,
  classifyEntry,
  entriesForPeer,
  knownIdsFor,
  ledgerEntryToInner,
  syncDataPayloadSchema,
  syncHelloPayloadSchema,
  type LedgerEntry,
} from "../../shared/tally/ledger";
import type { InnerMessage, TallyClient } from "./client";

export interface SyncOptions {
  /** 12.8: how long an unknown peer may stay without becoming a friend. Default 15 s. */
  allowanceMs?: number;
  /** How often friends that are not present are asked for again (connect_peer). Default 30 s. */
  presenceIntervalMs?: number;
  /** Inner message types whose ledger entry makes its two parties friends. Default ["friend_accept"]. */
  friendAcceptTypes?: string[];
  /** Overrides the ledger-derived friend test. */
  isFriend?: (userId: string) => boolean;
}

/** A small set that forgets its oldest members past `max`. */
class BoundedSet {
  private readonly set = new Set<string>();
  constructor(private readonly max: number) {}
  has(v: string) {
    return this.set.has(v);
  }
  add(v: string) {
    this.set.add(v);
    if (this.set.size > this.max) this.set.delete(this.set.values().next().value as string);
  }
}

export class SyncEngine {
  private readonly allowanceMs: number;
  private readonly presenceIntervalMs: number;
  private readonly friendAcceptTypes: Set<string>;
  /** Users with a friend_accept entry between them and me. */
  private readonly friends = new Set<string>();
  /** Online devices of other users (and own devices), as the relay reported them. */
  private readonly present = new Map<string, Set<string>>();
  /** Unknown peers being synced with under the allowance (12.8). */
  private readonly allowance = new Map<string, ReturnType<typeof setTimeout>>();
  /** 13.5: ledger ids already broadcast to own devices (or received from them). */
  private readonly broadcast = new BoundedSet(100_000);
  /** 13.8: sync messages already handled, by (from, id): each relay's copy is dropped. */
  private readonly handled = new BoundedSet(10_000);
  private presenceTimer: ReturnType<typeof setInterval> | undefined;
  private loaded: Promise<void> | undefined;

  constructor(
    private readonly client: TallyClient,
    private readonly opts: SyncOptions = {},
  ) {
    this.allowanceMs = opts.allowanceMs ?? 15_000;
    this.presenceIntervalMs = opts.presenceIntervalMs ?? 30_000;
    this.friendAcceptTypes = new Set(opts.friendAcceptTypes ?? ["friend_accept"]);
  }

  private get me(): string {
    return this.client.npub;
  }

  /** Reads the ledger once to know the friends. */
  load(): Promise<void> {
    this.loaded ??= (async () => {
      for (const e of await this.client.store.listLedger()) this.noteFriend(e);
    })();
    return this.loaded;
  }

  isFriend(userId: string): boolean {
    return this.opts.isFriend ? this.opts.isFriend(userId) : this.friends.has(userId);
  }

  friendList(): string[] {
    return [...this.friends];
  }

  private noteFriend(e: Pick<LedgerEntry, "type" | "from_user_id" | "to_user_id">): void {
    if (!this.friendAcceptTypes.has(e.type)) return;
    const other = e.from_user_id === this.me ? e.to_user_id : e.to_user_id === this.me ? e.from_user_id : undefined;
    if (other && other !== this.me) this.friends.add(other);
  }

  // ---- lifecycle --------------------------------------------------------------------------

  /** 12.2: sync starts after queue_drained. Asks the relay for the friends' online devices. */
  async onDrained(): Promise<void> {
    await this.load();
    this.askForFriends();
    if (this.presenceTimer) clearInterval(this.presenceTimer);
    this.presenceTimer = setInterval(() => this.askForFriends(), this.presenceIntervalMs);
  }

  private askForFriends(): void {
    for (const f of this.friends) if (!this.present.get(f)?.size) this.client.connectPeer(f);
  }

  onClose(): void {
    if (this.presenceTimer) clearInterval(this.presenceTimer);
    this.presenceTimer = undefined;
    for (const t of this.allowance.values()) clearTimeout(t);
    this.allowance.clear();
    this.present.clear();
  }

  /**
   * A peer_connect: the presence is noted at once; what it triggers (a sync_hello, an allowance)
   * is returned, for the client to run in order with the frames it is handling.
   */
  onPeerConnect(user: string, device: string): () => Promise<void> {
    let devices = this.present.get(user);
    if (!devices) this.present.set(user, (devices = new Set()));
    const newDevice = !devices.has(device);
    const firstDevice = devices.size === 0;
    devices.add(device);
    return async () => {
      await this.load();
      if (user === this.me) {
        // 13.8: a newly appearing own device gets a sync_hello at once, by relay (13.6 on a channel).
        if (newDevice) await this.sendHello(this.me);
        return;
      }
      if (!firstDevice) return; // only the first peer_connect of a presence triggers sync
      if (!this.isFriend(user) && !this.allowance.has(user)) {
        // 12.8: an unknown peer gets an allowance to become a friend through sync.
        this.allowance.set(
          user,
          setTimeout(() => this.expireAllowance(user), this.allowanceMs),
        );
      }
      await this.sendHello(user);
    };
  }

  onPeerDisconnect(user: string, device: string): void {
    const devices = this.present.get(user);
    devices?.delete(device);
    if (devices && devices.size === 0) this.present.delete(user);
  }

  private expireAllowance(user: string): void {
    this.allowance.delete(user);
    if (this.isFriend(user)) return;
    this.present.delete(user);
    this.client.closeDirectChannels(user);
    void this.client.emitSyncEvent("peer_dropped", user);
  }

  /** Whether sync messages from `user` are taken: own devices, friends, and peers under allowance. */
  private accepts(user: string): boolean {
    return user === this.me || this.isFriend(user) || this.allowance.has(user);
  }

  // ---- messages ---------------------------------------------------------------------------

  private async sendHello(peer: string): Promise<void> {
    const ledger = await this.client.store.listLedger();
    this.client.sendSyncMessage(peer, SYNC_HELLO, { known_ids: knownIdsFor(ledger, this.me, peer) });
  }

  /** 13.8: true the first time a sync message (from, id) is seen; each relay's copy after that is dropped. */
  firstSight(inner: InnerMessage): boolean {
    const key = `${inner.from_user_id}/${inner.id}`;
    if (this.handled.has(key)) return false;
    this.handled.add(key);
    return true;
  }

  /** A sync_hello or sync_data from a friend, a peer under allowance, or an own device. */
  async onSyncMessage(inner: InnerMessage): Promise<void> {
    await this.load();
    const from = inner.from_user_id;
    if (!this.accepts(from)) return;
    if (inner.type === SYNC_HELLO) {
      const p = syncHelloPayloadSchema.safeParse(inner.payload);
      if (!p.success) return;
      const ledger = await this.client.store.listLedger();
      for (const chunk of chunkEntries(entriesForPeer(ledger, this.me, from, p.data.known_ids))) {
        this.client.sendSyncMessage(from, SYNC_DATA, { entries: chunk });
      }
      return;
    }
    if (inner.type === SYNC_DATA) {
      const p = syncDataPayloadSchema.safeParse(inner.payload);
      if (!p.success) return;
      await this.applyEntries(acceptableEntries(p.data.entries, this.me, from), from);
    }
  }

  private async applyEntries(entries: LedgerEntry[], from: string): Promise<void> {
    const self = from === this.me;
    // 13.5: seed the broadcast set first, so applying them echoes nothing back.
    if (self) for (const e of entries) this.broadcast.add(e.id);
    let applied = 0;
    for (const e of entries) {
      if (await this.client.store.hasLedger(e.id)) continue;
      const entry: LedgerEntry = { ...e, timestamp: new Date().toISOString() };
      if (classifyEntry(e, this.me) === "inbound") {
        // 12.7 inbound-like: through the message handler (no receipt on the sync path).
        await this.client.applyFromSync(ledgerEntryToInner(entry) as InnerMessage, entry);
      } else {
        // 12.7 outbound-only: into the ledger, not re-applied.
        await this.client.appendLedger(entry);
      }
      applied++;
    }
    if (!self && this.allowance.has(from) && this.isFriend(from)) {
      clearTimeout(this.allowance.get(from));
      this.allowance.delete(from);
      void this.client.emitSyncEvent("peer_kept", from);
    }
    void this.client.emitSyncEvent("synced", from, applied);
  }

  /** 13.5: every new ledger entry goes to the connected own devices. */
  onLedgerAppend(entry: LedgerEntry): void {
    this.noteFriend(entry);
    if (this.broadcast.has(entry.id)) return;
    this.broadcast.add(entry.id);
    if (!this.present.get(this.me)?.size) return;
    this.client.sendSyncMessage(this.me, SYNC_DATA, { entries: [entry] });
  }

  /** Own devices online, as last reported. */
  ownDevicesOnline(): number {
    return this.present.get(this.me)?.size ?? 0;
  }

  /** The ids of the own devices online, as last reported. */
  ownDeviceIds(): Set<string> {
    return new Set(this.present.get(this.me));
  }
}
