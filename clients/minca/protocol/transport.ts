// The one interface both sides of a code exchange talk through: a room of peers named by proven
// did:keys, where every message arrives labelled with its sender. The relay room
// (clients/minca/relay-room.ts) and the in-memory bus (clients/minca/memory-bus.ts) implement
// it, and one contract suite runs against both.

export type RoomEvent =
  | { kind: "peer"; did: string }
  | { kind: "gone"; did: string }
  | { kind: "message"; type: string; from: string; payload?: unknown }
  | { kind: "closed"; code: number; reason: string };

export interface RoomMessage {
  type: string;
  /** One peer's did; without it, every other peer. */
  to?: string;
  payload?: unknown;
}

export interface RoomTransport {
  /** This side's own (throwaway) did in the room. */
  readonly did: string;
  /** The peers already in the room when this side joined (the welcome). */
  readonly peers: readonly string[];
  send(msg: RoomMessage): void;
  /** Everything after the welcome, in order; events before the first listener are kept for it. */
  listen(listener: (e: RoomEvent) => void): void;
  close(): void;
}

/** Joins a room by id, with a fresh throwaway key, and resolves once welcomed. */
export type JoinRoom = (room: string) => Promise<RoomTransport>;

/** A listener list that keeps events until someone listens: the shared part of every transport. */
export class EventQueue {
  private listeners: Array<(e: RoomEvent) => void> = [];
  private pending: RoomEvent[] = [];

  emit(e: RoomEvent): void {
    if (this.listeners.length === 0) {
      this.pending.push(e);
      return;
    }
    for (const l of this.listeners) l(e);
  }

  listen(listener: (e: RoomEvent) => void): void {
    this.listeners.push(listener);
    const pending = this.pending.splice(0);
    for (const e of pending) listener(e);
  }
}
