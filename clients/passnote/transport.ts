// The one transport interface a Passnote peer syncs over: peers, their arrival and loss, and
// per-peer ordered delivery of binary frames (docs/passnote.md). Two implementations: the relay's
// sync rooms (relay-transport.ts) and an in-memory bus for tests (memory-bus.ts); both pass the
// same contract tests.
import { callListener } from "../listeners";

export interface TransportEvents {
  /** This side is in: its own peer id and the peers already present. */
  welcome: (self: string, peers: string[]) => void;
  join: (peer: string) => void;
  leave: (peer: string) => void;
  /** One frame from a peer, byte-exact, in the order that peer sent it. */
  frame: (from: string, frame: Uint8Array) => void;
  /**
   * The relay refused a message (rate_limited) and asked to wait this long; the transport paces
   * itself and does not resend (it cannot know which frame): the peer repairs by anti-entropy.
   */
  refused: (retryAfterMs: number) => void;
  /** The transport is gone (closed locally or by the other end). */
  close: (code: number, reason: string) => void;
}

export interface Transport {
  /** This side's peer id (16 hex), once welcomed. */
  readonly self: string | undefined;
  /** The other peers present now. */
  peers(): string[];
  /**
   * Sends one frame to a peer, or to every other peer with BROADCAST. Resolves when the transport
   * has taken the frame off the sender's hands (the send window counts frames until then).
   */
  send(to: string, frame: Uint8Array): Promise<void>;
  /** Adds listeners; returns the function that removes them. */
  subscribe(listener: Partial<TransportEvents>): () => void;
  close(): void;
}

/** A small listener registry shared by the implementations. */
export class Listeners {
  private readonly all = new Set<Partial<TransportEvents>>();

  add(l: Partial<TransportEvents>): () => void {
    this.all.add(l);
    return () => this.all.delete(l);
  }

  emit<K extends keyof TransportEvents>(event: K, ...args: Parameters<TransportEvents[K]>): void {
    for (const l of [...this.all]) {
      const fn = l[event] as ((...a: unknown[]) => unknown) | undefined;
      if (fn) callListener(event, fn, ...args);
    }
  }
}
