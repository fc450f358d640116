// The reference Passnote peer: an in-memory store, syncing with the other devices of its group
// over one Transport (a relay sync room in production, the in-memory bus in tests). Identity mode
// is the default (`identity`: the group's credentials and this device's key; plain frames under
// the roster key, user data in ratchet sessions); passphrase-only mode is chosen by giving `key`
// instead. The protocol is shared/passnote/sync.ts; this file binds it to a transport.
//
// The peer runs over one open database instance (`store`, a PassnoteStore; in memory by default):
// it takes the instance's inst token, moves its clock past every HLC the database holds, and reads
// the device's keys from it when the options give none (keeping them there when they are given).
// A new node id (the HLCs' node part) is minted per instance unless the options name one, so two
// instances on one database never stamp two different writes with one HLC.
import { bytesToHex, equalBytes, randomBytes } from "../../shared/encoding";
import { PASSNOTE_LIMITS } from "../../shared/limits";
import type { Value } from "../../shared/passnote/codec";
import { newInstToken } from "../../shared/passnote/handshake";
import { MemoryStore, type PassnoteStore, type StoredKeys } from "../../shared/passnote/records";
import type { DeviceIdentity } from "../../shared/passnote/roster";
import { SyncEngine, type SyncEngineOptions } from "../../shared/passnote/sync";
import type { WireRecord } from "../../shared/passnote/wire";
import type { Transport } from "./transport";

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

  constructor(opts: PassnotePeerOptions) {
    const { transport, antiEntropyIntervalMs, ...rest } = opts;
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
    this.unsubscribe = transport.subscribe({
      welcome: (_self, peers) => {
        for (const p of peers) this.engine.peerJoined(p);
      },
      join: (p) => this.engine.peerJoined(p),
      leave: (p) => this.engine.peerLeft(p),
      frame: (from, frame) => void this.engine.receive(from, frame),
      close: () => this.engine.close(),
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

  /** Resolves once every write so far is durable in the store (a crash after it loses none). */
  flushed(): Promise<void> {
    return this.engine.store.flushed();
  }

  put(collection: string, key: string, value: Value): WireRecord {
    return this.engine.put(collection, key, value);
  }

  delete(collection: string, key: string): WireRecord {
    return this.engine.delete(collection, key);
  }

  get(collection: string, key: string): Value | undefined {
    const r = this.engine.store.get(collection, key);
    return r && !r.is_deleted ? r.value : undefined;
  }

  /** Identity mode, owner only: admits a device by its Ed25519 public key. */
  admit(pub: Uint8Array): WireRecord {
    return this.engine.admit(pub);
  }

  /** Identity mode, owner only: revokes a device; it is refused sessions from then on. */
  revoke(device: string): WireRecord {
    return this.engine.revoke(device);
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

  close(): void {
    this.detach();
    this.transport.close();
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
