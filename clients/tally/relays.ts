// The relays one Tally client uses at once (the Tally protocol section 6.5: a client MAY be connected to
// several relays and hand an envelope to several; recipients dedup by id; the relays do not
// coordinate). One RelayConnection per relay, each with its own registration, device id, flush
// and reconnect backoff; this module keeps their state and says where a frame goes: to every
// registered relay, to the first that is registered (then the next on failure), or to the relay
// a peer device was announced on (signaling is per relay: device ids are each relay's own).
import { RelayConnection, type ConnectionOptions } from "./connection";
import type { ServerMessage } from "../../shared/tally/messages";

/** How an envelope is handed to relays: to every registered one, or to the first (then the next on failure). */
export type RelayMode = "all" | "first";

export interface Relay {
  readonly url: string;
  readonly index: number;
  readonly conn: RelayConnection;
  /** This relay's device id for the client while registered. */
  deviceId: string | undefined;
  /** queue_drained arrived on the current connection (12.2). */
  drained: boolean;
}

interface RelaySetHandlers {
  onMessage(relay: Relay, msg: ServerMessage): void;
  onClosed(relay: Relay, code: number, reason: string, willReconnect: boolean): void;
}

/** One relay's state in `status()`. */
export interface RelayStatus {
  url: string;
  /** registered: open and registered; connecting: a socket is opening or waiting to register; closed: none (reconnecting later, or closed for good). */
  state: "registered" | "connecting" | "closed";
  deviceId: string | undefined;
  drained: boolean;
}

export class RelaySet {
  readonly relays: Relay[];
  /** Which relay announced a peer device ("<user> <device>"), for its signals. */
  private readonly deviceRelay = new Map<string, Relay>();
  /** The next relay's index: indexes grow in list order, also for relays added later. */
  private nextIndex = 0;
  private started = false;

  constructor(
    urls: string[],
    private readonly opts: Omit<ConnectionOptions, "relayUrl">,
    private readonly handlers: RelaySetHandlers,
  ) {
    if (urls.length === 0) throw new Error("a Tally client needs at least one relay URL");
    this.relays = urls.map((url) => this.make(url));
  }

  private make(url: string): Relay {
    const relay: Relay = {
      url,
      index: this.nextIndex++,
      deviceId: undefined,
      drained: false,
      conn: new RelayConnection(
        { ...this.opts, relayUrl: url },
        { onMessage: (m) => this.handlers.onMessage(relay, m), onClosed: (c, r, again) => this.handlers.onClosed(relay, c, r, again) },
      ),
    };
    return relay;
  }

  /** Adds a relay at the end of the list, started when the set is; false when its URL is there. */
  add(url: string): boolean {
    if (this.relays.some((r) => r.url === url)) return false;
    const relay = this.make(url);
    this.relays.push(relay);
    if (this.started) relay.conn.start();
    return true;
  }

  /** Closes a relay's connection for good and takes it out of the list; false when it is not there. */
  remove(url: string): boolean {
    const i = this.relays.findIndex((r) => r.url === url);
    if (i < 0) return false;
    const [relay] = this.relays.splice(i, 1);
    relay.conn.stop();
    return true;
  }

  start(): void {
    this.started = true;
    for (const r of this.relays) r.conn.start();
  }

  stop(): void {
    this.started = false;
    for (const r of this.relays) r.conn.stop();
  }

  /** Registered relays, in the order given. */
  /** Every relay's state, in the order given (relays added later at the end). */
  status(): RelayStatus[] {
    return this.relays.map((r) => ({
      url: r.url,
      state: r.conn.open ? ("registered" as const) : r.conn.socket ? ("connecting" as const) : ("closed" as const),
      deviceId: r.deviceId,
      drained: r.drained && r.conn.open,
    }));
  }

  open(): Relay[] {
    return this.relays.filter((r) => r.conn.open);
  }

  /** Sends to every registered relay; how many took it. */
  sendAll(msg: unknown): number {
    let n = 0;
    for (const r of this.relays) if (r.conn.open && r.conn.send(msg)) n++;
    return n;
  }

  /** Sends to the first registered relay after `after` (in list order); the relay that took it. */
  sendFirst(msg: unknown, after = -1): Relay | undefined {
    for (const r of this.relays) if (r.index > after && r.conn.open && r.conn.send(msg)) return r;
    return undefined;
  }

  /** Notes the relay a peer device was announced on (peer_connect). */
  noteDevice(relay: Relay, user: string, device: string): void {
    this.deviceRelay.set(`${user} ${device}`, relay);
  }

  forgetDevice(user: string, device: string): void {
    this.deviceRelay.delete(`${user} ${device}`);
  }

  /** The relay a peer device was announced on, if it is still registered. */
  relayOf(user: string, device: string): Relay | undefined {
    const r = this.deviceRelay.get(`${user} ${device}`);
    return r?.conn.open ? r : undefined;
  }

  /** Forgets the devices a relay announced (its connection ended); returns them. */
  dropDevicesOf(relay: Relay): Array<[user: string, device: string]> {
    const gone: Array<[string, string]> = [];
    for (const [key, r] of this.deviceRelay) {
      if (r !== relay) continue;
      this.deviceRelay.delete(key);
      const [user, device] = key.split(" ");
      gone.push([user, device]);
    }
    return gone;
  }
}
