// The reference Passnote peer: an in-memory store, syncing with the other devices of its group
// over one Transport (a relay sync room in production, the in-memory bus in tests). Identity mode
// is the default (`identity`: the group's credentials and this device's key; plain frames under
// the roster key, user data in ratchet sessions); passphrase-only mode is chosen by giving `key`
// instead. The protocol is clients/passnote/protocol/sync.ts; this file binds it to a transport.
//
// The peer runs over one open database instance (`store`, a PassnoteStore; in memory by default):
// it takes the instance's inst token, moves its clock past every HLC the database holds, and reads
// the device's keys from it when the options give none (keeping them there when they are given).
// A new node id (the HLCs' node part) is minted per instance unless the options name one, so two
// instances on one database never stamp two different writes with one HLC.
import { bytesToHex, equalBytes, randomBytes } from "../../shared/encoding";
import { PASSNOTE_LIMITS } from "../../shared/limits";
import type { Value } from "./protocol/codec";
import { newInstToken } from "./protocol/handshake";
import { MemoryStore, type PassnoteStore, type StoredKeys } from "./protocol/records";
import { ROSTER_COLLECTION, type DeviceIdentity } from "./protocol/roster";
import { SyncEngine, type SyncEngineOptions } from "./protocol/sync";
import type { WireRecord } from "./protocol/wire";
import type { Transport } from "./transport";
import { PeerEvents, type PassnotePeerEvents, type PeerChange, type PeerStatus } from "./peer-events";

/** How long whenSynced() waits by default. */
export const WHEN_SYNCED_TIMEOUT_MS = 30_000;
/** How often whenSynced() asks a peer's state while it is not in step. */
export const WHEN_SYNCED_ASK_MS = 250;

/** A device of the group as the roster lists it (identity mode). */
export interface DeviceInfo {
  /** The id revoke() takes: hex of SHA-256(public key), 16 bytes (deviceIdOf). */
  id: string;
  publicKey: Uint8Array;
  revoked: boolean;
  /** The group's owner (it signs the roster). */
  owner: boolean;
  /** This device. */
  self: boolean;
}

export interface PassnotePeerOptions extends Partial<Omit<SyncEngineOptions, "transmit" | "selfId">> {
  transport: Transport;
  /**
   * Periodic anti-entropy: forceSync with every agreed peer this often (default
   * anti_entropy_interval_ms, 5 minutes; 0 turns it off), so a record the clock bound refused
   * returns without a reconnect.
   */
  antiEntropyIntervalMs?: number;
  // One of the two (identity wins if both are given):
  //   identity  identity mode (the default): the group's credentials and this device's Ed25519 key;
  //   key       passphrase-only mode: the 32-byte passphrase key is the only membership.
  // Neither, when `store` holds the device's keys from an earlier run.
  // store: the open database instance (a PassnoteStore; default: a new MemoryStore). The peer uses
  //   its inst token, moves its clock past the store's, and keeps the given keys in it.
}

export class PassnotePeer {
  readonly engine: SyncEngine;
  readonly transport: Transport;
  private readonly unsubscribe: () => void;

  private readonly events = new PeerEvents();
  private closed = false;
  private lastStatus = "";

  constructor(opts: PassnotePeerOptions) {
    const { transport, antiEntropyIntervalMs, ...rest } = opts;
    if (typeof rest.store?.merge !== "function" && rest.store !== undefined)
      throw new TypeError(
        "`store` is a PassnoteStore (SqliteStore.open, IndexedDbStore.open, openStore(adapter), new MemoryStore()): await its open()",
      );
    this.transport = transport;
    const store = rest.store ?? new MemoryStore();
    const keys = keysFor(store, rest.identity, rest.key);
    this.engine = new SyncEngine({
      node: rest.node ?? `n${bytesToHex(randomBytes(6))}`,
      inst: instFor(store),
      ...rest,
      ...keys,
      store,
      transmit: (peer, bytes) => transport.send(peer, bytes),
      selfId: () => transport.self,
    });
    // Restored from the database: the clock moves past every HLC it holds, so a write after a
    // restart wins over the writes before it even if the wall clock went back meanwhile.
    this.engine.clock.observe(store.clock());
    this.engine.on("change", (collection, records, from) => this.events.emit("change", { collection, records, origin: "remote", from }));
    this.engine.on("error", (e) => this.events.emit("error", e));
    this.engine.on("agreed", () => this.statusChanged());
    this.unsubscribe = transport.subscribe({
      welcome: (_self, peers) => {
        for (const p of peers) this.engine.peerJoined(p);
        this.statusChanged();
      },
      join: (p) => this.engine.peerJoined(p),
      leave: (p) => {
        this.engine.peerLeft(p);
        this.statusChanged();
      },
      frame: (from, frame) => void this.engine.receive(from, frame),
      close: () => {
        this.engine.close();
        this.closed = true;
        this.statusChanged();
      },
      // A frame refused by the relay: once it allows messages again, repair by anti-entropy.
      refused: (ms) => this.scheduleRepair(ms),
    });
    // Attached to a transport that is already in (a restart on a live connection): every peer
    // present is met afresh, with this instance's new inst token.
    if (transport.self !== undefined) for (const p of transport.peers()) this.engine.peerJoined(p);
    const every = antiEntropyIntervalMs ?? PASSNOTE_LIMITS.anti_entropy_interval_ms;
    if (every > 0) {
      this.antiEntropyTimer = setInterval(() => this.engine.antiEntropyPass(), every);
      (this.antiEntropyTimer as { unref?: () => void }).unref?.();
    }
  }

  private antiEntropyTimer: ReturnType<typeof setInterval> | undefined;

  private repairTimer: ReturnType<typeof setTimeout> | undefined;

  private scheduleRepair(afterMs: number): void {
    if (this.repairTimer) return; // one repair covers every refusal until it runs
    this.repairTimer = setTimeout(() => {
      this.repairTimer = undefined;
      this.engine.repair();
    }, afterMs);
  }

  get store(): PassnoteStore {
    return this.engine.store;
  }

  /**
   * Listens to the peer: `change` (every change to its records, local and remote, with its
   * origin), `status` (the connection), `error`. Returns the function that removes the listener.
   */
  on<K extends keyof PassnotePeerEvents>(event: K, fn: PassnotePeerEvents[K]): () => void {
    return this.events.on(event, fn);
  }

  /**
   * Listens to the changes of one collection, or of one record of it (`key`): `fn` gets the
   * change with only the matching records. Returns the function that removes it.
   */
  subscribe(collection: string, fn: (change: PeerChange) => void, key?: string): () => void {
    return this.events.on("change", (c) => {
      if (c.collection !== collection) return;
      const records = key === undefined ? c.records : c.records.filter((r) => r.key === key);
      if (records.length) return fn({ ...c, records });
    });
  }

  /**
   * Resolves once this peer is in step with `peer` (a transport peer id), or with every peer it
   * has agreed with (waiting for the first when there is none): the peer's state names the same
   * watermark as this side's for every collection they sync (identity mode: in a session), and
   * nothing is left to send it. Asks the peer's state again while they differ (only the
   * collections that differ are probed). Rejects after `timeoutMs` (default 30 s).
   */
  async whenSynced(peer?: string, opts: { timeoutMs?: number } = {}): Promise<void> {
    const deadline = Date.now() + (opts.timeoutMs ?? WHEN_SYNCED_TIMEOUT_MS);
    const targets = peer !== undefined ? [peer] : await this.agreedPeers(deadline);
    await Promise.all(targets.map((p) => this.syncedWith(p, deadline)));
  }

  private agreedPeers(deadline: number): Promise<string[]> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const peers = this.engine.agreedPeers();
        if (peers.length) return resolve(peers);
        if (this.closed || Date.now() > deadline)
          return reject(new Error("whenSynced: no peer to sync with (is another device in the room?)"));
        setTimeout(check, WHEN_SYNCED_ASK_MS);
      };
      check();
    });
  }

  private syncedWith(peer: string, deadline: number): Promise<void> {
    const core = this.engine.core;
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const inStep = new Set<string>();
      const finish = (err?: Error) => {
        off();
        clearTimeout(timer);
        if (err) reject(err);
        else resolve();
      };
      const off = this.engine.on("state", (from, theirs, ch) => {
        if (from !== peer) return;
        const ours = this.store.collectionNames().filter((c) => core.inScope(c, ch) && this.store.watermark(c) !== "");
        const same =
          ours.every((c) => theirs.get(c) === this.store.watermark(c)) &&
          [...theirs].every(([c, w]) => w === "" || w === this.store.watermark(c));
        if (same) inStep.add(ch);
        else inStep.delete(ch);
        const s = core.peers.get(peer);
        if (
          s &&
          this.engine.channelsWith(s).every((c) => inStep.has(c)) &&
          s.window.pending === 0 &&
          s.paced.length === 0 &&
          !s.outbox.busy
        )
          finish();
      });
      const ask = () => {
        if (this.closed || Date.now() > deadline)
          return finish(new Error(`whenSynced: not in step with peer ${peer} in time (is it connected? status: ${this.status.state})`));
        const s = core.peers.get(peer);
        if (s && (!core.identity || s.session)) this.engine.askState(peer);
        timer = setTimeout(ask, WHEN_SYNCED_ASK_MS);
      };
      ask();
    });
  }

  /** The connection's status now (the `status` event says when it changes). */
  get status(): PeerStatus {
    const state = this.closed ? "closed" : this.transport.self !== undefined ? "connected" : "connecting";
    return { state, peers: this.engine.agreedPeers().length };
  }

  private statusChanged(): void {
    const now = this.status;
    const key = `${now.state}/${now.peers}`;
    if (key === this.lastStatus) return;
    this.lastStatus = key;
    this.events.emit("status", now);
  }

  private local(collection: string, record: WireRecord): WireRecord {
    this.events.emit("change", { collection, records: [record], origin: "local" });
    return record;
  }

  /** Resolves once every write so far is durable in the store (a crash after it loses none). */
  flushed(): Promise<void> {
    return this.engine.store.flushed();
  }

  put(collection: string, key: string, value: Value): WireRecord {
    return this.local(collection, this.engine.put(collection, key, value));
  }

  delete(collection: string, key: string): WireRecord {
    return this.local(collection, this.engine.delete(collection, key));
  }

  /**
   * A record's value, synchronously (undefined when absent or deleted). For a store that reads
   * synchronously: MemoryStore, SqliteStore, an adapter with loadSync. A store that reads its values
   * asynchronously (IndexedDbStore, an adapter with only `load`) throws here for a value it does not
   * hold in memory: use read(), which works with every store.
   */
  get(collection: string, key: string): Value | undefined {
    const r = this.engine.store.get(collection, key);
    return r && !r.is_deleted ? r.value : undefined;
  }

  /** A record's value (undefined when absent or deleted), read from any store: `await peer.read(collection, key)`. */
  async read(collection: string, key: string): Promise<Value | undefined> {
    const [r] = await this.engine.store.read(collection, [key]);
    return r && !r.is_deleted ? r.value : undefined;
  }

  /** Identity mode, owner only: admits a device by its Ed25519 public key. */
  admit(pub: Uint8Array): WireRecord {
    return this.local(ROSTER_COLLECTION, this.engine.admit(pub));
  }

  /**
   * Identity mode, owner only: revokes a device by its id (DeviceInfo.id, deviceIdOf(publicKey));
   * its sessions end at once and it gets nothing written from then on.
   */
  revoke(device: string): WireRecord {
    return this.local(ROSTER_COLLECTION, this.engine.revoke(device));
  }

  /** Identity mode: the devices the roster lists (signed by the owner), revoked ones included. */
  listDevices(): DeviceInfo[] {
    const self = this.engine.deviceId;
    const owner = this.engine.core.identity?.group.owner;
    const out: DeviceInfo[] = [];
    for (const r of this.engine.store.all(ROSTER_COLLECTION)) {
      const e = this.engine.rosterEntry(r.key);
      if (!e) continue;
      out.push({ id: e.device, publicKey: e.pub, revoked: e.revoked, owner: !!owner && equalBytes(owner, e.pub), self: e.device === self });
    }
    return out;
  }

  forceSync(): void {
    this.engine.forceSync();
  }

  /** Stops this instance without closing the transport (as a database instance closing). */
  detach(): void {
    clearTimeout(this.repairTimer);
    clearInterval(this.antiEntropyTimer);
    this.unsubscribe();
    this.engine.close();
  }

  /**
   * Stops syncing, closes the transport and then the store (after its writes are flushed).
   * Resolves once the store is closed; a store the app opened is closed too (open it again to
   * start another peer on the database).
   */
  async close(): Promise<void> {
    this.detach();
    this.transport.close();
    this.closed = true;
    this.statusChanged();
    await this.engine.store.close();
  }

  /**
   * close(), then deletes the store's database: the SQLite file with its -wal and -shm files, or
   * the IndexedDB database. The device's keys go with it: this device leaves for good.
   */
  async destroy(): Promise<void> {
    await this.close();
    await this.engine.store.destroy?.();
  }
}

/**
 * The keys the peer runs with: those the options give (kept in the store the first time; a store
 * that holds another device's keys is refused), or else those the store holds.
 */
function keysFor(
  store: PassnoteStore,
  identity: DeviceIdentity | undefined,
  key: Uint8Array | undefined,
): { identity: DeviceIdentity } | { key: Uint8Array } {
  const given: StoredKeys | undefined = identity ? { identity } : key ? { key } : undefined;
  const held = store.keys();
  if (!given) {
    if (!held) throw new Error("no keys: give `identity` or `key`, or open a store that holds them");
    return held;
  }
  if (!held) store.saveKeys(given);
  else if (!sameKeys(held, given)) throw new Error("this database holds another device's keys: open the device's own database");
  return given;
}

function sameKeys(a: StoredKeys, b: StoredKeys): boolean {
  if ("key" in a || "key" in b) return "key" in a && "key" in b && equalBytes(a.key, b.key);
  const [x, y] = [a.identity, b.identity];
  return (
    equalBytes(x.deviceKey, y.deviceKey) &&
    equalBytes(x.group.rosterKey, y.group.rosterKey) &&
    equalBytes(x.group.groupKey, y.group.groupKey) &&
    equalBytes(x.group.owner, y.group.owner)
  );
}

/** Stores a peer has already run on. */
const used = new WeakSet<PassnoteStore>();

/**
 * The inst token of a new peer: its store instance's, the first time; a fresh one for a peer
 * started again on an instance another peer already ran on (that engine's state is gone, so the
 * other peers must see a restart too).
 */
function instFor(store: PassnoteStore): string {
  if (used.has(store)) return newInstToken();
  used.add(store);
  return store.inst;
}
