// What a PassnotePeer tells the app: every change to its records with its origin (a local write or
// a peer's), subscriptions to one collection or one record, the connection's status, and errors.
// Listeners are called one at a time, each guarded: one that throws (or whose promise rejects) is
// reported as an `error` (and an `error` nobody listens for goes to the console), so no listener
// stops the others or the sync.
import type { WireRecord } from "./protocol/wire";
import { ListenerError } from "./protocol/events";

/** A change to the peer's records: one collection, the records that changed it, and where they came from. */
export interface PeerChange {
  collection: string;
  /** Whole records as stored (a deletion is a record with is_deleted). */
  records: WireRecord[];
  /** "local": this peer's put/delete/admit/revoke; "remote": records a peer sent. */
  origin: "local" | "remote";
  /** The transport peer they came from (remote only). */
  from?: string;
}

/**
 * The connection as the app sees it: "connecting" (no room yet, or the transport is re-opening a
 * lost connection), "connected" (in the room; `peers` counts the peers agreed with), "closed"
 * (for good: close(), or the relay refused the key).
 */
export interface PeerStatus {
  state: "connecting" | "connected" | "closed";
  peers: number;
}

export interface PassnotePeerEvents {
  change: (change: PeerChange) => void;
  status: (status: PeerStatus) => void;
  /** A listener failed (ListenerError), or the store did (StoreFailedError: the peer stopped syncing). */
  error: (err: Error) => void;
}

type Fn = (...args: never[]) => unknown;

export class PeerEvents {
  private readonly byEvent = new Map<keyof PassnotePeerEvents, Set<Fn>>();

  on<K extends keyof PassnotePeerEvents>(event: K, fn: PassnotePeerEvents[K]): () => void {
    let set = this.byEvent.get(event);
    if (!set) {
      set = new Set();
      this.byEvent.set(event, set);
    }
    set.add(fn as Fn);
    return () => void set.delete(fn as Fn);
  }

  emit<K extends keyof PassnotePeerEvents>(event: K, ...args: Parameters<PassnotePeerEvents[K]>): void {
    const fns = [...(this.byEvent.get(event) ?? [])] as Array<(...a: Parameters<PassnotePeerEvents[K]>) => unknown>;
    if (event === "error" && !fns.length) console.error(`edge-relay: ${(args[0] as Error).message}`, args[0]);
    for (const fn of fns) {
      try {
        const r = fn(...args);
        if (r instanceof Promise) r.catch((e: unknown) => this.failed(event, e));
      } catch (e) {
        this.failed(event, e);
      }
    }
  }

  private failed(event: keyof PassnotePeerEvents, e: unknown): void {
    if (event === "error") console.error('edge-relay: an "error" listener failed', e);
    else this.emit("error", new ListenerError(event, e));
  }
}
