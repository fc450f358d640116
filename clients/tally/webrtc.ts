// WebRTC direct channels (the Tally protocol sections 6.1, 6.3 and 13.1) for a browser client: one
// RTCPeerConnection per peer device, negotiated through the relay's device-scoped signaling
// (peer_connect, webrtc_signal) with "perfect negotiation" — both ends may offer, the polite end
// (clients/tally/protocol/negotiation.ts) rolls back on a collision; to keep collisions rare, the impolite
// end offers first and the polite end offers only when no offer came within a short delay. Each connection carries one data
// channel, pre-negotiated (id 0) so both ends create it alike; once open it is handed to the
// client with dataChannelAdapter, and envelopes and receipts go over it first.
import type { TallyClient } from "./client";
import { dataChannelAdapter } from "./direct";
import { isPolite, rtcSignalSchema, type RtcSignal } from "./protocol/negotiation";

export type DirectState = "connecting" | "open" | "closed";

export interface DirectMeshOptions {
  /** The RTCPeerConnection constructor; default the global one. */
  RTCPeerConnection?: typeof RTCPeerConnection;
  /** ICE servers; default none: host candidates only, no STUN or TURN. */
  iceServers?: RTCIceServer[];
  /** Which announced peer devices to connect to; default every one. */
  accept?: (userId: string, deviceId: string) => boolean;
  /**
   * Milliseconds the polite end waits for the impolite end's offer before it offers itself.
   * Default 2000. (Perfect negotiation settles a collision either way; avoiding the usual one
   * keeps a rollback out of the first connection, which Chromium does not always recover from.)
   */
  politeOfferDelayMs?: number;
  /** A channel changed state. */
  onState?: (userId: string, deviceId: string, state: DirectState, polite: boolean) => void;
}

interface Peer {
  userId: string;
  deviceId: string;
  pc: RTCPeerConnection;
  dc: RTCDataChannel;
  polite: boolean;
  makingOffer: boolean;
  ignoreOffer: boolean;
  state: DirectState;
  /** Signals are applied one after another. */
  chain: Promise<void>;
}

/** The label of the data channel Tally frames travel on. */
export const DATA_CHANNEL_LABEL = "tally";

export class DirectMesh {
  private readonly peers = new Map<string, Peer>();
  private readonly RTC: typeof RTCPeerConnection;
  private readonly offs: Array<() => void> = [];

  constructor(
    private readonly client: TallyClient,
    private readonly opts: DirectMeshOptions = {},
  ) {
    this.RTC = opts.RTCPeerConnection ?? globalThis.RTCPeerConnection;
    this.offs.push(
      client.on("peer_connect", (u, d) => void this.peer(u, d)),
      client.on("signal", (u, d, s) => this.onSignal(u, d, s)),
      client.on("peer_disconnect", (u, d) => this.drop(u, d)),
      // 12.8: an unknown peer's allowance ended: every connection to it goes, whatever its state.
      client.on("peer_dropped", (u) => this.dropUser(u)),
    );
  }

  /** State of the channel to one device, if any. */
  state(userId: string, deviceId: string): DirectState | undefined {
    return this.peers.get(key(userId, deviceId))?.state;
  }

  /** Open channels, as [userId, deviceId] pairs. */
  open(): Array<[string, string]> {
    return [...this.peers.values()].filter((p) => p.state === "open").map((p) => [p.userId, p.deviceId]);
  }

  /** Closes every connection and stops listening. */
  close(): void {
    for (const off of this.offs.splice(0)) off();
    for (const p of [...this.peers.values()]) this.drop(p.userId, p.deviceId);
  }

  /** The connection to one peer device, created on its first peer_connect or signal. */
  private peer(userId: string, deviceId: string): Peer | undefined {
    const k = key(userId, deviceId);
    const known = this.peers.get(k);
    if (known) return known;
    // Roles compare device ids one relay gave: this client's at the relay that announced the peer.
    const me = this.client.ownDeviceIdFor(userId, deviceId);
    if (me === undefined || (userId === this.client.npub && deviceId === me)) return undefined;
    if (this.opts.accept && !this.opts.accept(userId, deviceId)) return undefined;
    // 12.8: only own devices, friends, and peers under their allowance get a connection.
    if (!this.client.sync.mayConnect(userId)) return undefined;
    const polite = isPolite({ userId: this.client.npub, deviceId: me }, { userId, deviceId });
    const pc = new this.RTC({ iceServers: this.opts.iceServers ?? [] });
    const dc = pc.createDataChannel(DATA_CHANNEL_LABEL, { negotiated: true, id: 0, ordered: true });
    const p: Peer = {
      userId,
      deviceId,
      pc,
      dc,
      polite,
      makingOffer: false,
      ignoreOffer: false,
      state: "connecting",
      chain: Promise.resolve(),
    };
    this.peers.set(k, p);
    const send = (signal: RtcSignal) => this.client.signal(userId, deviceId, signal);
    const json = <T>(v: { toJSON(): T }) => v.toJSON() as never;

    const offer = async () => {
      try {
        p.makingOffer = true;
        await pc.setLocalDescription();
        if (pc.localDescription) send({ description: json(pc.localDescription) });
      } catch (err) {
        console.warn("direct channel: offer failed", err);
      } finally {
        p.makingOffer = false;
      }
    };
    let waited = false;
    pc.onnegotiationneeded = () => {
      // The impolite end offers first; the polite end only if no offer came in time.
      if (p.polite && !pc.remoteDescription && !waited) {
        waited = true;
        setTimeout(() => {
          if (this.peers.get(k) === p && !pc.remoteDescription && pc.signalingState === "stable") void offer();
        }, this.opts.politeOfferDelayMs ?? 2_000);
        return;
      }
      void offer();
    };
    pc.onicecandidate = (ev) => {
      if (ev.candidate) send({ candidate: json(ev.candidate) });
    };
    pc.onconnectionstatechange = () => {
      if (pc.connectionState === "failed" || pc.connectionState === "closed") this.lost(p);
    };
    dc.addEventListener("open", () => {
      if (p.state !== "connecting") return;
      // 13.6: registering a self-peer channel sends its sync_hello (TallyClient.addDirectChannel).
      dataChannelAdapter(this.client, userId, dc, deviceId);
      this.setState(p, "open");
    });
    dc.addEventListener("close", () => this.lost(p));
    this.opts.onState?.(userId, deviceId, "connecting", polite);
    return p;
  }

  private onSignal(userId: string, deviceId: string, raw: unknown): void {
    const parsed = rtcSignalSchema.safeParse(raw);
    if (!parsed.success) return;
    const p = this.peer(userId, deviceId);
    if (!p) return;
    const signal = parsed.data;
    p.chain = p.chain.then(() => this.apply(p, signal)).catch((err) => console.warn("direct channel: signal failed", err));
  }

  /** Perfect negotiation: the impolite end ignores a colliding offer, the polite end rolls back. */
  private async apply(p: Peer, signal: RtcSignal): Promise<void> {
    const { pc } = p;
    if ("description" in signal) {
      const description = signal.description as RTCSessionDescriptionInit;
      const collision = description.type === "offer" && (p.makingOffer || pc.signalingState !== "stable");
      p.ignoreOffer = !p.polite && collision;
      if (p.ignoreOffer) return;
      await pc.setRemoteDescription(description); // rolls back our own offer when polite
      if (description.type === "offer") {
        await pc.setLocalDescription();
        if (pc.localDescription) this.client.signal(p.userId, p.deviceId, { description: pc.localDescription.toJSON() });
      }
      return;
    }
    try {
      await pc.addIceCandidate(signal.candidate ?? undefined);
    } catch (err) {
      if (!p.ignoreOffer) throw err;
    }
  }

  /**
   * A channel that had opened went away without the relay saying the device left: re-pair (13.1)
   * by asking the relay for the user's devices again (connect_peer), which answers peer_connect.
   */
  private lost(p: Peer): void {
    if (this.peers.get(key(p.userId, p.deviceId)) !== p) return;
    const wasOpen = p.state === "open";
    this.drop(p.userId, p.deviceId);
    if (wasOpen && this.client.sync.mayConnect(p.userId)) this.client.connectPeer(p.userId);
  }

  /** Closes every connection to a user, in every state. */
  private dropUser(userId: string): void {
    for (const p of [...this.peers.values()]) if (p.userId === userId) this.drop(p.userId, p.deviceId);
  }

  private drop(userId: string, deviceId: string): void {
    const k = key(userId, deviceId);
    const p = this.peers.get(k);
    if (!p) return;
    this.peers.delete(k);
    try {
      p.dc.close();
      p.pc.close();
    } catch {
      // already closed
    }
    this.setState(p, "closed");
  }

  private setState(p: Peer, state: DirectState): void {
    if (p.state === state) return;
    p.state = state;
    this.opts.onState?.(p.userId, p.deviceId, state, p.polite);
  }
}

function key(userId: string, deviceId: string): string {
  return `${userId}/${deviceId}`;
}
