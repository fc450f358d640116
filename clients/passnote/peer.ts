// The reference Passnote peer: an in-memory store, syncing with the other devices of its group
// over one Transport (a relay sync room in production, the in-memory bus in tests). Identity mode
// is the default (`identity`: the group's credentials and this device's key; plain frames under
// the roster key, user data in ratchet sessions); passphrase-only mode is chosen by giving `key`
// instead. The protocol is shared/passnote/sync.ts; this file binds it to a transport.
import { bytesToHex, randomBytes } from "../../shared/encoding";
import { PASSNOTE_LIMITS } from "../../shared/limits";
import type { Value } from "../../shared/passnote/codec";
import { MemoryStore } from "../../shared/passnote/records";
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
}


export class PassnotePeer {
  readonly engine: SyncEngine;
  readonly transport: Transport;
  private readonly unsubscribe: () => void;

  constructor(opts: PassnotePeerOptions) {
    const { transport, antiEntropyIntervalMs, ...rest } = opts;
    this.transport = transport;
    this.engine = new SyncEngine({
      node: rest.node ?? `n${bytesToHex(randomBytes(6))}`,
      store: rest.store ?? new MemoryStore(),
      ...rest,
      transmit: (peer, bytes) => transport.send(peer, bytes),
      selfId: () => transport.self,
    });
    this.unsubscribe = transport.subscribe({
      welcome: (_self, peers) => peers.forEach((p) => this.engine.peerJoined(p)),
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

  get store(): MemoryStore {
    return this.engine.store;
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
