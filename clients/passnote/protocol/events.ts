// The Passnote engine's events as the app sees them: what each one says, and how listeners are
// called. Each listener runs on its own: one that throws, or returns a promise that rejects, is
// reported as an `error` event (ListenerError) and the others still run; the engine's callers
// emit only after the protocol's own reaction to what happened (ending a revoked device's
// sessions, say), so no listener can hold the protocol back. An `error` with no listener goes
// to the console.
import { Listeners } from "../../listeners";
import type { WireRecord } from "./wire";

type DropReason = "unauthenticated" | "malformed" | "out-of-scope" | "no-session" | "stale" | "unopenable" | "roster-signature";

export interface SyncEvents {
  /** The versions do not overlap: the exchange with this peer has ended. */
  incompatible: (peer: string, theirs: number[]) => void;
  /** The version was agreed with a peer. */
  agreed: (peer: string, version: number) => void;
  /** A new inst token from a peer we knew: everything held for it was dropped. */
  restarted: (peer: string) => void;
  /** Records from a peer changed the store. */
  change: (collection: string, records: WireRecord[], from: string) => void;
  /** A delta record was refused by the clock bound. */
  refused: (collection: string, record: WireRecord, from: string) => void;
  /** Identity mode: a ratchet session with a peer's device is open. */
  session: (peer: string, device: string) => void;
  /** Identity mode: a peer's session ended because its device was revoked (or left the roster). */
  sessionEnded: (peer: string, device: string) => void;
  /** Identity mode: a ratchet-hello failed one of its acceptance checks. */
  helloRefused: (peer: string, reason: string) => void;
  /** Identity mode: this side asked a peer to re-send its hello (sent a fresh one of its own). */
  rehello: (peer: string) => void;
  /** A frame (or a roster record) was dropped; nothing is said on the wire. */
  dropped: (peer: string, reason: DropReason) => void;
  /**
   * Something went wrong that the app should know of: a listener of another event threw (or its
   * promise rejected; the engine carried on as if it had returned), or the store failed (the
   * engine stopped syncing, see StoreFailedError). A listener of `error` itself that throws is
   * reported on the console.
   */
  error: (err: Error) => void;
  /** A peer's state arrived (its watermarks in one channel), after the probes it asked for were queued. */
  state: (peer: string, watermarks: ReadonlyMap<string, string>, channel: "passphrase" | "plain" | "session") => void;
}

/** A listener of an engine event threw or rejected: the engine went on; `cause` is what it threw. */
export class ListenerError extends Error {
  constructor(
    readonly event: string,
    readonly cause: unknown,
  ) {
    super(
      `a "${event}" listener failed: ${cause instanceof Error ? cause.message : String(cause)}. The sync went on without it; fix the listener`,
    );
    this.name = "ListenerError";
  }
}

/**
 * The store could not keep a record (or a write it had taken failed later): the engine stopped
 * syncing, so that no peer is told this side holds what it does not. `cause` is the store's error.
 */
export class StoreFailedError extends Error {
  constructor(readonly cause: unknown) {
    super(
      `the Passnote store failed (${cause instanceof Error ? cause.message : String(cause)}): this peer stopped syncing and keeps nothing more. Close it, reopen the database (SqliteStore.open, IndexedDbStore.open) and start a new peer on it; what was saved before is there`,
    );
    this.name = "StoreFailedError";
  }
}

/** The engine's listeners, called as the file's header says. */
export class EngineEvents {
  private readonly listeners = new Listeners<SyncEvents>();

  on<K extends keyof SyncEvents>(event: K, fn: SyncEvents[K]): () => void {
    return this.listeners.on(event, fn);
  }

  /**
   * Calls the app's listeners of an event, each on its own: one that throws (or returns a promise
   * that rejects) is reported as an `error` event and the others still run. The protocol's own
   * reactions never hang on a listener: every caller emits after it has done them.
   */
  emit<K extends keyof SyncEvents>(event: K, ...args: Parameters<SyncEvents[K]>): void {
    const fns = [...this.listeners.of(event)];
    // An error nobody listens for is not lost: it goes to the console.
    if (event === "error" && !fns.length) console.error(`edge-relay: ${(args[0] as Error).message}`, args[0]);
    for (const fn of fns) {
      try {
        const r = (fn as (...a: Parameters<SyncEvents[K]>) => unknown)(...args);
        if (r instanceof Promise) r.catch((e: unknown) => this.listenerFailed(event, e));
      } catch (e) {
        this.listenerFailed(event, e);
      }
    }
  }

  private listenerFailed(event: keyof SyncEvents, e: unknown): void {
    if (event === "error") {
      console.error('edge-relay: an "error" listener failed', e);
      return;
    }
    this.emit("error", new ListenerError(event, e));
  }
}
