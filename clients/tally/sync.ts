// The client's sync engine (the Tally protocol sections 12 and 13): ledger recovery from friends, the
// remote allowance for unknown peers, and the self-mesh that keeps a user's devices converged
// (initial self-sync, live broadcast, relay fallback). Decisions about entries and messages are in
// clients/tally/protocol/ledger.ts; this is the state machine around them. It reaches the client through
// the small SyncHost interface, which the client implements.
import {
  PartCollector,
  SYNC_DATA,
  SYNC_HELLO,
  SYNC_LIMITS,
  acceptableEntries,
  classifyEntry,
  entriesForPeer,
  entriesOfParts,
  helloParts,
  knownFromHello,
  readsExtensions,
  seedSyncData,
  ledgerEntryToInner,
  ledgerKey,
  syncDataParts,
  syncDataPayloadSchema,
  syncHelloPayloadSchema,
  type LedgerEntry,
  type SyncDataPayload,
  type SyncHelloPayload,
} from "./protocol/ledger";
import { bytesToHex, randomBytes } from "../../shared/encoding";
import type { InnerMessage } from "./events";
import type { TallyStore } from "./store";

/** What the sync engine needs from the client. */
export interface SyncHost {
  readonly npub: string;
  readonly store: TallyStore;
  /** Asks the relay for a user's online devices (6.3). */
  connectPeer(userId: string): void;
  /** Whether a sync message to `to` would take the relay (some device of it has no open channel). */
  syncNeedsRelay(to: string): boolean;
  /** Sends one sync message by every path that reaches `to`; true if any carried it. */
  sendSyncMessage(to: string, type: string, payload: unknown): Promise<boolean>;
  /** An inbound-like entry (12.7): through the message handler once; false if it stays out of the ledger. */
  applyFromSync(inner: InnerMessage, entry: LedgerEntry): Promise<boolean>;
  appendLedger(entry: LedgerEntry): Promise<boolean>;
  /** Closes every connection to a user, in every state (12.8). */
  dropPeer(userId: string): void;
  emitSyncEvent(event: "synced" | "peer_kept" | "peer_dropped", ...args: unknown[]): Promise<void>;
}

export interface SyncOptions {
  /** 12.8: how long an unknown peer may stay without becoming a friend. Default 15 s. */
  allowanceMs?: number;
  /** How often friends that are not present are asked for again (connect_peer). Default 30 s. */
  presenceIntervalMs?: number;
  /** Types of the local user's own message that accept a friendship. Default ["friend_accept"]. */
  friendAcceptTypes?: string[];
  /** Types of the local user's own message that ask for one; the peer's accept then completes it. Default ["friend_request"]. */
  friendRequestTypes?: string[];
  /** The app's own friend test (the explicit callback of 12.8): replaces the ledger-derived one. */
  isFriend?: (userId: string) => boolean;
  /**
   * A multi-part answer still incomplete this long after its first part arrived is given up and
   * asked for again with a fresh hello (a part lost on the way). Default 60 s.
   */
  answerTimeoutMs?: number;
  /**
   * When the app's handler failed on entries of a sync answer, the peer is asked again (a fresh
   * hello) after this long, so those messages are handled when the handler works again. Default 5 s.
   */
  retryFailedMs?: number;
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

const newSetId = () => bytesToHex(randomBytes(8));

export class SyncEngine {
  private readonly allowanceMs: number;
  private readonly presenceIntervalMs: number;
  private readonly friendAcceptTypes: Set<string>;
  private readonly friendRequestTypes: Set<string>;
  /** Users the local user accepted, or asked and was accepted by (12.8, decision in docs/tally.md). */
  private readonly friends = new Set<string>();
  private readonly requestedBy = new Set<string>();
  private readonly acceptedBy = new Set<string>();
  /** Online devices of other users (and own devices), as the relay reported them. */
  private readonly present = new Map<string, Set<string>>();
  /** Unknown peers being synced with under the allowance (12.8). */
  private readonly allowance = new Map<string, ReturnType<typeof setTimeout>>();
  /** 13.5: ledger keys already broadcast to own devices (or received from them). */
  private readonly broadcast = new BoundedSet(100_000);
  /** 13.8: sync messages already handled, by (from, id): each relay's copy is dropped. */
  private readonly handled = new BoundedSet(10_000);
  private readonly hellos = new PartCollector<SyncHelloPayload>();
  private readonly answers = new PartCollector<SyncDataPayload>();
  private presenceTimer: ReturnType<typeof setInterval> | undefined;
  /** Incomplete answer sets, by peer and set id: their timeout (answerTimeoutMs). */
  private readonly answerTimers = new Map<string, ReturnType<typeof setTimeout>>();
  /** Peers to ask again because a handler failed on their entries (retryFailedMs). */
  private readonly retryTimers = new Map<string, ReturnType<typeof setTimeout>>();
  /**
   * Messages whose handler failed here and that no path handled since, by key, with when they
   * failed first. While any is left, own devices are asked again (a hello), so one that handled it
   * (and acked the relay, and receipted the sender, who then stops retrying) still brings it here.
   */
  private readonly unhandled = new Map<string, number>();
  private unhandledRounds = 0;
  private loaded: Promise<void> | undefined;

  constructor(
    private readonly host: SyncHost,
    private readonly opts: SyncOptions = {},
  ) {
    this.allowanceMs = opts.allowanceMs ?? 15_000;
    this.presenceIntervalMs = opts.presenceIntervalMs ?? 30_000;
    this.friendAcceptTypes = new Set(opts.friendAcceptTypes ?? ["friend_accept"]);
    this.friendRequestTypes = new Set(opts.friendRequestTypes ?? ["friend_request"]);
  }

  private get me(): string {
    return this.host.npub;
  }

  /** Reads the ledger once to know the friends. */
  load(): Promise<void> {
    this.loaded ??= (async () => {
      for (const e of await this.host.store.listLedger()) this.noteFriend(e);
    })();
    return this.loaded;
  }

  isFriend(userId: string): boolean {
    return this.opts.isFriend ? this.opts.isFriend(userId) : this.friends.has(userId);
  }

  friendList(): string[] {
    return [...this.friends];
  }

  /** Whether connections with `userId` may exist: own devices, friends, and peers under allowance (12.8). */
  mayConnect(userId: string): boolean {
    return userId === this.me || this.isFriend(userId) || this.allowance.has(userId);
  }

  /**
   * 12.8 decision: a friendship comes only from the local user's own entries: an accept it sent,
   * or a request it sent that the peer then accepted. A stranger's message alone never makes one
   * (and a message the app ignored is not in the ledger at all).
   */
  private noteFriend(e: Pick<LedgerEntry, "type" | "from_user_id" | "to_user_id">): void {
    const mine = e.from_user_id === this.me && e.to_user_id !== this.me;
    const theirs = e.to_user_id === this.me && e.from_user_id !== this.me;
    if (mine && this.friendAcceptTypes.has(e.type)) this.friends.add(e.to_user_id);
    if (mine && this.friendRequestTypes.has(e.type)) {
      this.requestedBy.add(e.to_user_id);
      if (this.acceptedBy.has(e.to_user_id)) this.friends.add(e.to_user_id);
    }
    if (theirs && this.friendAcceptTypes.has(e.type)) {
      this.acceptedBy.add(e.from_user_id);
      if (this.requestedBy.has(e.from_user_id)) this.friends.add(e.from_user_id);
    }
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
    for (const f of this.friends) if (!this.present.get(f)?.size) this.host.connectPeer(f);
  }

  /**
   * The relay connection ended. Presence is forgotten, and every peer still under its allowance is
   * dropped now, its connections closed (12.8): no timer may outlive the connection it guarded.
   */
  onClose(): void {
    if (this.presenceTimer) clearInterval(this.presenceTimer);
    this.presenceTimer = undefined;
    this.present.clear();
    for (const user of [...this.allowance.keys()]) this.expireAllowance(user);
    for (const t of this.answerTimers.values()) clearTimeout(t);
    this.answerTimers.clear();
    for (const t of this.retryTimers.values()) clearTimeout(t);
    this.retryTimers.clear();
  }

  /**
   * A peer_connect: the presence (and an unknown peer's allowance) is noted at once; what it
   * triggers (a sync_hello) is returned, for the client to run in order with the frames it handles.
   */
  onPeerConnect(user: string, device: string): () => Promise<void> {
    let devices = this.present.get(user);
    if (!devices) {
      devices = new Set();
      this.present.set(user, devices);
    }
    const newDevice = !devices.has(device);
    const firstDevice = devices.size === 0;
    devices.add(device);
    if (user !== this.me && !this.isFriend(user) && !this.allowance.has(user)) {
      // 12.8: an unknown peer gets an allowance to become a friend through sync.
      this.allowance.set(
        user,
        setTimeout(() => this.expireAllowance(user), this.allowanceMs),
      );
    }
    return async () => {
      await this.load();
      if (user === this.me) {
        // 13.8: a newly appearing own device gets a sync_hello at once, by relay (13.6 on a channel).
        if (newDevice) await this.sendHello(this.me);
        return;
      }
      this.keepIfFriend(user);
      if (firstDevice) await this.sendHello(user); // only the first peer_connect of a presence triggers sync
    };
  }

  onPeerDisconnect(user: string, device: string): void {
    const devices = this.present.get(user);
    devices?.delete(device);
    if (devices && devices.size === 0) this.present.delete(user);
  }

  /** 13.6: a direct channel to an own device opened: exchange sync_hello on it. */
  async onSelfChannelOpen(): Promise<void> {
    await this.load();
    await this.sendHello(this.me);
  }

  private keepIfFriend(user: string): void {
    if (this.allowance.has(user) && this.isFriend(user)) {
      clearTimeout(this.allowance.get(user));
      this.allowance.delete(user);
      void this.host.emitSyncEvent("peer_kept", user);
    }
  }

  private expireAllowance(user: string): void {
    clearTimeout(this.allowance.get(user));
    this.allowance.delete(user);
    if (this.isFriend(user)) return;
    this.present.delete(user);
    this.hellos.forget(user);
    this.answers.forget(user);
    this.host.dropPeer(user);
    void this.host.emitSyncEvent("peer_dropped", user);
  }

  /** Own devices the relay reports online. */
  ownDeviceIds(): Set<string> {
    return new Set(this.present.get(this.me));
  }

  // ---- messages ---------------------------------------------------------------------------

  /** 12.5: a hello naming every entry held for `peer`, in as many parts as it takes. */
  private async sendHello(peer: string): Promise<void> {
    const ledger = await this.host.store.listLedger();
    const ignored = (await this.host.store.listIgnored?.()) ?? [];
    for (const part of helloParts(ledger, this.me, peer, newSetId(), ignored)) await this.host.sendSyncMessage(peer, SYNC_HELLO, part);
  }

  /** 13.8: true the first time a sync message (from, id) is seen; each relay's copy after that is dropped. */
  firstSight(inner: InnerMessage): boolean {
    const key = ledgerKey(inner);
    if (this.handled.has(key)) return false;
    this.handled.add(key);
    return true;
  }

  /** A sync_hello or sync_data from a friend, a peer under allowance, or an own device. */
  async onSyncMessage(inner: InnerMessage): Promise<void> {
    await this.load();
    const from = inner.from_user_id;
    if (!this.mayConnect(from)) return;
    if (inner.type === SYNC_HELLO) {
      const p = syncHelloPayloadSchema.safeParse(inner.payload);
      if (!p.success) return;
      const parts = this.hellos.add(from, p.data);
      if (parts) await this.answer(from, parts);
      return;
    }
    if (inner.type === SYNC_DATA) {
      const p = syncDataPayloadSchema.safeParse(inner.payload);
      if (!p.success) return;
      const parts = this.answers.add(from, p.data);
      const set = p.data.set;
      if (set !== undefined) this.watchAnswer(from, set, parts !== undefined);
      if (!parts) return; // 12.7: an answer applies once it is whole, in chronological order
      const { settled } = await this.applyEntries(acceptableEntries(entriesOfParts(parts), this.me, from), from);
      // The responder stopped at its window (relay path): pull the rest (12.6 "sends the
      // remainder") while rounds still settle something: an entry applied, or a message the app
      // ignored (the next hello names it, so the next window moves past it).
      if (parts.some((x) => x.more) && settled > 0) await this.sendHello(from);
    }
  }

  /** A handler failed on entries from `from`: ask it again later (once per peer at a time). */
  private retryLater(from: string, delay = this.opts.retryFailedMs ?? 5_000): void {
    if (this.retryTimers.has(from)) return;
    this.retryTimers.set(
      from,
      setTimeout(() => {
        this.retryTimers.delete(from);
        if (this.mayConnect(from)) void this.sendHello(from);
        if (from === this.me) this.retryUnhandled();
      }, delay),
    );
  }

  /** The app's handler failed on a message (any path): own devices are asked until it is handled. */
  noteFailed(inner: { from_user_id: string; id: string }): void {
    const key = ledgerKey(inner);
    if (!this.unhandled.has(key)) this.unhandled.set(key, Date.now());
    this.unhandledRounds = 0;
    this.retryLater(this.me);
  }

  /** A message was handled (or found processed): no longer asked for. */
  noteHandled(inner: { from_user_id: string; id: string }): void {
    this.unhandled.delete(ledgerKey(inner));
  }

  /** Asks own devices again while failed messages remain, backing off (doubling, up to 60 s) and giving up after 10 minutes. */
  private retryUnhandled(): void {
    const now = Date.now();
    for (const [key, at] of this.unhandled) if (now - at > 600_000) this.unhandled.delete(key);
    if (this.unhandled.size === 0) return;
    this.unhandledRounds++;
    const first = this.opts.retryFailedMs ?? 5_000;
    this.retryLater(this.me, Math.min(first * 2 ** this.unhandledRounds, 60_000));
  }

  /** Starts (or, once the set is whole, ends) the timeout of an answer set. */
  private watchAnswer(from: string, set: string, whole: boolean): void {
    const key = `${from} ${set}`;
    const timer = this.answerTimers.get(key);
    if (whole) {
      if (timer) clearTimeout(timer);
      this.answerTimers.delete(key);
      return;
    }
    if (timer) return;
    this.answerTimers.set(
      key,
      setTimeout(() => {
        this.answerTimers.delete(key);
        if (!this.answers.pending(from, set)) return;
        // A part never came: drop what arrived and ask again; the answer to the new hello is whole.
        this.answers.drop(from, set);
        if (this.mayConnect(from)) void this.sendHello(from);
      }, this.opts.answerTimeoutMs ?? 60_000),
    );
  }

  /** 12.6: the entries the asker lacks, chronological, cut into one answer set (windowed on the relay). */
  private async answer(to: string, hello: SyncHelloPayload[]): Promise<void> {
    const ledger = await this.host.store.listLedger();
    const entries = entriesForPeer(ledger, this.me, to, knownFromHello(hello));
    if (entries.length === 0) return; // equal ledgers exchange nothing
    if (!readsExtensions(hello)) {
      // An asker that speaks only the Tally protocol's form: plain entries, whole, all of them (12.6).
      for (const payload of seedSyncData(entries).payloads) await this.host.sendSyncMessage(to, SYNC_DATA, payload);
      return;
    }
    const windowParts = this.host.syncNeedsRelay(to) ? SYNC_LIMITS.relay_window_parts : undefined;
    for (const part of syncDataParts(entries, newSetId(), { windowParts })) await this.host.sendSyncMessage(to, SYNC_DATA, part);
  }

  /**
   * Applies an answer's entries in order. `applied`: entries that entered the ledger; `settled`:
   * those plus messages now known as ignored that were not before (both are named by the next
   * hello). A message whose handler failed settles nothing: it is asked for again.
   */
  private async applyEntries(entries: LedgerEntry[], from: string): Promise<{ applied: number; settled: number }> {
    const self = from === this.me;
    // 13.5: seed the broadcast set first, so applying them echoes nothing back.
    if (self) for (const e of entries) this.broadcast.add(ledgerKey(e));
    let applied = 0;
    let settled = 0;
    let failed = 0;
    for (const e of entries) {
      if (await this.host.store.hasLedger(e.from_user_id, e.id)) continue;
      const entry: LedgerEntry = { ...e, timestamp: new Date().toISOString() };
      if (classifyEntry(e, this.me) === "inbound") {
        // 12.7 inbound-like: through the message handler (no receipt on the sync path).
        const known = (await this.host.store.getProcessed(e.from_user_id, e.id))?.result !== undefined;
        if (await this.host.applyFromSync(ledgerEntryToInner(entry) as InnerMessage, entry)) {
          applied++;
          settled++;
        } else if ((await this.host.store.getProcessed(e.from_user_id, e.id))?.result === undefined) failed++;
        else if (!known) settled++;
      } else if (await this.host.appendLedger(entry)) {
        // 12.7 outbound-only: into the ledger, not re-applied.
        applied++;
        settled++;
      }
    }
    if (!self) this.keepIfFriend(from);
    if (failed > 0) this.retryLater(from);
    void this.host.emitSyncEvent("synced", from, applied);
    return { applied, settled };
  }

  /**
   * 13.5: every new ledger entry goes to every connected own device, by whichever path reaches
   * it; it is marked broadcast only once some path carried it.
   */
  async onLedgerAppend(entry: LedgerEntry): Promise<void> {
    this.noteFriend(entry);
    const key = ledgerKey(entry);
    if (this.broadcast.has(key)) return;
    let sent = false;
    for (const part of syncDataParts([entry], newSetId())) sent = (await this.host.sendSyncMessage(this.me, SYNC_DATA, part)) || sent;
    if (sent) this.broadcast.add(key);
  }
}
