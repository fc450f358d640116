// One peer's state in the sync engine (engine-core.ts), and the channel a frame travels in; and
// the outbox that keeps a peer's frames in the order they were made when a shipment's records
// must be read from an asynchronous store first.
import type { InstTokens } from "./handshake";
import type { RatchetHello, Ephemeral, Session } from "./session";
import type { SendWindow } from "./send-window";

/**
 * Which layer a frame travelled in: "passphrase" (no identity), "plain" (kind 0x00, roster key)
 * or "session" (kind 0x01, ratcheted).
 */
export type Channel = "passphrase" | "plain" | "session";

export interface PeerState {
  window: SendWindow;
  /**
   * Paced work for this peer: the opening probes (or fallback shipments) a state asked for, each
   * made when it is sent, fed into the window while it holds fewer than paced_below frames.
   */
  paced: Array<() => void>;
  /** A frame was left out because the queue was full: once it drains, the peer is asked for its state. */
  overflowed: boolean;
  inbound: Promise<void>;
  /** Frames wait here behind a shipment whose records the store is reading (asynchronous stores). */
  outbox: Outbox;
  tokens: InstTokens;
  replied: boolean;
  /** Handshakes this side sent on this connection (at most HANDSHAKES_PER_CONNECTION). */
  handshakes: number;
  /** A handshake without an inst token arrived from this peer. */
  tokenless?: boolean;
  version?: number;
  caps: Set<string>;
  incompatible: boolean;
  node?: string;
  /**
   * Something other than a handshake arrived from this peer since the version was agreed: the peer
   * agreed too. Until then our handshake may have been lost, and anti-entropy sends it again.
   */
  heard: boolean;
  /**
   * Without recon1: per collection, the store's sequence number up to which every record was
   * shipped to this peer on this connection (no entry: never, so the next pass is a full one).
   */
  shipped: Map<string, number>;
  /**
   * Per channel, the collections probed since this side's last hello in that channel, with the
   * peer's watermark they were probed under (null: not named by the peer).
   */
  stateSeries: Map<Channel, Map<string, string | null>>;
  /**
   * Channels whose last hello from this side answered a digest mismatch: the states that answer
   * it probe only collections whose watermarks differ (anti-entropy.ts onState).
   */
  digestHello: Set<Channel>;
  /** Channels whose last hello only asked how the peer stands (whenSynced): no watermark differs, nothing is probed. */
  askHello: Set<Channel>;
  // ---- identity mode ----
  /** This side's ephemeral key for the connection; its secret is wiped once the session exists. */
  mine?: Ephemeral;
  session?: Session;
  /** The peer's device, once its hello was accepted. */
  peerDevice?: string;
  /** The device its handshake names (hex id of the device key it carries), if any. */
  handshakeDevice?: string;
  /**
   * Ratcheted frames arrived without a session from a device whose roster record has not arrived
   * yet: once it does (and lists a member), the peer is asked to re-send its hello.
   */
  unopened?: boolean;
  /** When this side last sent a ratchet-hello (a session missing for longer is repaired). */
  helloAt: number;
  /** A hello from a device whose roster record has not arrived yet (re-checked on roster change). */
  held?: RatchetHello;
  /** Ephemeral keys of hellos accepted from this peer (hex): a replayed hello changes nothing. */
  seenEphemerals: string[];
  /** When this side last asked the peer to re-send its hello. */
  lastRehello: number;
  /** When this side last answered a peer's new hello with a fresh one (dropping a session). */
  lastAnswer: number;
  /**
   * The peer's ephemeral public key of the hello this side answered (no secret: this side's key
   * for the answer is `mine`, unused until the session exists). Either the peer's next ratcheted
   * frame opens under (mine, answered), or its next hello (its answer to ours) pairs with mine.
   */
  answered?: Uint8Array;
}

/**
 * A peer's frames in the order they were made, where some wait for a read: while a shipment's
 * records are being read from the store (an asynchronous one: IndexedDB, an app's adapter without
 * loadSync), every later frame to the peer waits behind it, so a reply never overtakes the records
 * that come before it. With a synchronous store nothing ever waits here.
 */
export class Outbox {
  private tail: Promise<void> | undefined;

  constructor(
    /** Called when the last waiting step has run (the engine feeds paced work again). */
    private readonly onIdle: () => void,
    /** A step threw: reported (the engine's `error`), and the steps after it still run. */
    private readonly onError: (e: unknown) => void = () => {},
  ) {}

  /** Whether a step is waiting (a frame made now must wait behind it). */
  get busy(): boolean {
    return this.tail !== undefined;
  }

  /** Runs `step` once every earlier step has run (steps may be asynchronous). Never rejects: a step that throws is reported. */
  after(step: () => void | Promise<void>): Promise<void> {
    const run = (this.tail ?? Promise.resolve()).then(step).then(
      () => undefined,
      (e: unknown) => this.onError(e),
    );
    const tail = run.then(() => {
      if (this.tail === tail) {
        this.tail = undefined;
        this.onIdle();
      }
    });
    this.tail = tail;
    return tail;
  }

  /** Resolves once nothing waits. */
  async idle(): Promise<void> {
    while (this.tail) await this.tail;
  }
}
