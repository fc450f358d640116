// The ways a frame leaves a Tally client: the relays (every registered one, or the first then the
// next, the Tally protocol §6.5) and the open direct channels (6.1). The client decides what to
// send; this module decides which path carries it: receipts over a channel first, sync messages by
// every path that reaches the peer's devices (13.8), signals by the relay that announced the
// device (6.3), acks on the relay that delivered the copy.
import type { PeerEnvelope } from "../../shared/tally/envelope";
import type { DirectChannels } from "./direct";
import type { Relay, RelayMode, RelaySet } from "./relays";

interface PathsOptions {
  npub: string;
  acks: boolean;
  relayMode: RelayMode;
  /** Own devices the relays report online (13.8), kept by the sync engine. */
  ownDeviceIds: () => ReadonlySet<string>;
}

/** "first" mode: how many envelopes' last refusing relay is remembered (the oldest forgotten). */
const REFUSALS_KEPT = 10_000;

export class Paths {
  /** "first" mode: the relay (index) that last refused or did not store an envelope, by id. */
  private readonly refusedBy = new Map<string, number>();

  constructor(
    readonly relays: RelaySet,
    readonly channels: DirectChannels,
    private readonly opts: PathsOptions,
  ) {}

  /** "first" mode: an envelope a relay refuses goes to the next registered relay. */
  get firstMode(): boolean {
    return this.opts.relayMode === "first";
  }

  /**
   * Hands a frame to the relays: every registered one ("all"), or the first registered one
   * ("first"; relay_error for that id moves it to the next). False when no relay took it.
   */
  toRelays(msg: unknown): boolean {
    return this.opts.relayMode === "all" ? this.relays.sendAll(msg) > 0 : this.relays.sendFirst(msg) !== undefined;
  }

  /**
   * Queues an envelope on the relays by the relay mode. In "first" mode a retry starts after the
   * relay that last refused (or did not store) it, and comes round to the first again.
   */
  queue(envelope: PeerEnvelope): boolean {
    const msg = { type: "queue_peer_envelope", envelope };
    if (this.opts.relayMode === "all") return this.relays.sendAll(msg) > 0;
    const after = this.refusedBy.get(envelope.id);
    return (after !== undefined && this.relays.sendFirst(msg, after) !== undefined) || this.relays.sendFirst(msg) !== undefined;
  }

  /** "first" mode: a relay refused an envelope (or did not store it); the next registered relay after it gets it. */
  queueAfter(relay: Relay, envelope: PeerEnvelope): void {
    this.refusedBy.delete(envelope.id);
    this.refusedBy.set(envelope.id, relay.index);
    if (this.refusedBy.size > REFUSALS_KEPT) this.refusedBy.delete(this.refusedBy.keys().next().value as string);
    this.relays.sendFirst({ type: "queue_peer_envelope", envelope }, relay.index);
  }

  /** Queues an envelope on every registered relay: each reaches the devices registered on it. */
  queueEverywhere(envelope: PeerEnvelope): boolean {
    return this.relays.sendAll({ type: "queue_peer_envelope", envelope }) > 0;
  }

  /** Sends an envelope over every open channel to `to`; how many took it. */
  sendDirect(to: string, envelope: PeerEnvelope): number {
    return this.channels.send(to, JSON.stringify(envelope)).devices.length;
  }

  /** A receipt goes over a live direct channel when there is one (8.1), else through the relay. */
  sendReceipt(to: string, envelope: PeerEnvelope): void {
    if (this.sendDirect(to, envelope) === 0) this.queue(envelope);
  }

  /** Acks a relay's copy of an envelope (acks mode) on that relay; with none named, on every relay. */
  ack(relay: Relay | undefined, envelope: unknown): void {
    if (!this.opts.acks) return;
    const env = envelope as Partial<PeerEnvelope>;
    if (typeof env.id !== "string" || typeof env.from_user_id !== "string") return;
    const frame = { type: "ack", id: env.id, from_user_id: env.from_user_id };
    if (relay) relay.conn.send(frame);
    else this.relays.sendAll(frame);
  }

  /** Own devices the relay reports online that no open direct channel reaches (13.8). */
  private ownDevicesWithoutChannel(reached: Array<string | undefined>): number {
    const covered = new Set(reached);
    const uncovered = [...this.opts.ownDeviceIds()].filter((d) => !covered.has(d)).length;
    const anonymous = reached.filter((d) => d === undefined).length; // channels registered without a device id
    return Math.max(0, uncovered - anonymous);
  }

  /** Whether a sync message to `to` needs the relay: a friend with no channel, or an own device no channel reaches. */
  syncNeedsRelay(to: string): boolean {
    if (to !== this.opts.npub) return this.channels.count(to) === 0;
    return this.ownDevicesWithoutChannel(this.channels.devices(to)) > 0;
  }

  /**
   * Sends a sync envelope by every path that reaches `to`: its direct channels, and the relay for
   * a friend with none, or (to === npub, 13.8) for any own device the relay reports that no channel
   * took it to. Failed channel sends count as not sent. True if any path carried it.
   */
  sendSync(to: string, envelope: PeerEnvelope): boolean {
    const { devices } = this.channels.send(to, JSON.stringify(envelope));
    const needRelay = to === this.opts.npub ? this.ownDevicesWithoutChannel(devices) > 0 : devices.length === 0;
    const relayed = needRelay && this.queueEverywhere(envelope);
    return devices.length > 0 || relayed;
  }

  /** Asks every relay to introduce this device to every online device of `userId` there (6.3, 13.1). */
  connectPeer(userId: string): void {
    this.relays.sendAll({ type: "connect_peer", peer_user_id: userId });
  }

  /** Sends a WebRTC offer / answer / ICE candidate to exactly one device (6.3). */
  signal(userId: string, deviceId: string | undefined, signal: unknown): void {
    const msg: Record<string, unknown> = { type: "webrtc_signal", peer_user_id: userId, signal };
    if (deviceId === undefined) {
      this.relays.sendFirst(msg);
      return;
    }
    msg.peer_device_id = deviceId;
    // Device ids are each relay's own: the signal goes by the relay that announced the device.
    const relay = this.relays.relayOf(userId, deviceId);
    if (relay) relay.conn.send(msg);
    else this.relays.sendFirst(msg);
  }
}
