// Direct channels (the Tally protocol §6.1): the client sends envelopes and receipts over any channel that
// carries string frames. The client keeps its open channels in a DirectChannels registry, by peer
// user and (when known) device. A WebRTC data channel plugs in with `dataChannelAdapter`; tests
// use `connectInMemory`, two clients joined as if by a data channel.

/** A direct channel to one peer device: anything that carries a string frame (6.1). */
export interface DirectChannel {
  send(data: string): void;
  /** Called when the client drops the peer (12.8). */
  close?(): void;
}

/** What the helpers below need of a client. */
interface DirectHost {
  readonly npub: string;
  addDirectChannel(userId: string, channel: DirectChannel, deviceId?: string): () => void;
  handleDirectFrame(data: string, fromUserId?: string): Promise<void>;
}

interface Registered {
  channel: DirectChannel;
  deviceId: string | undefined;
}

/** The open direct channels, by peer user id. */
export class DirectChannels {
  private readonly byUser = new Map<string, Set<Registered>>();

  add(userId: string, channel: DirectChannel, deviceId?: string): () => void {
    let set = this.byUser.get(userId);
    if (!set) {
      set = new Set();
      this.byUser.set(userId, set);
    }
    const r: Registered = { channel, deviceId };
    set.add(r);
    return () => {
      const s = this.byUser.get(userId);
      if (!s?.delete(r)) return;
      if (s.size === 0) this.byUser.delete(userId);
    };
  }

  /** The device ids of the channels to a user (undefined where registered without one). */
  devices(userId: string): Array<string | undefined> {
    return [...(this.byUser.get(userId) ?? [])].map((r) => r.deviceId);
  }

  count(userId: string): number {
    return this.byUser.get(userId)?.size ?? 0;
  }

  /**
   * Sends a frame over every channel to `userId`. Returns the channels that took it: their device
   * ids (undefined where a channel was registered without one), and whether any send failed.
   */
  send(userId: string, frame: string): { devices: Array<string | undefined>; failed: number } {
    const devices: Array<string | undefined> = [];
    let failed = 0;
    for (const r of this.byUser.get(userId) ?? []) {
      try {
        r.channel.send(frame);
        devices.push(r.deviceId);
      } catch {
        failed++; // a closing channel; the relay path remains
      }
    }
    return { devices, failed };
  }

  /** Closes and forgets every channel to a user. */
  closeAll(userId: string): void {
    for (const r of this.byUser.get(userId) ?? []) {
      try {
        r.channel.close?.();
      } catch {
        // already closed
      }
    }
    this.byUser.delete(userId);
  }
}

/** Joins two clients (of two users, or two devices of one) with an in-memory channel each way. */
export function connectInMemory(a: DirectHost, b: DirectHost): () => void {
  let open = true;
  // Frames arrive in a later microtask, as from a real channel; closing either end closes both.
  const channel = (to: DirectHost, from: DirectHost): DirectChannel => ({
    send: (f) => {
      if (!open) throw new Error("channel closed");
      queueMicrotask(() => void to.handleDirectFrame(f, from.npub));
    },
    close: () => {
      open = false;
    },
  });
  const offA = a.addDirectChannel(b.npub, channel(b, a));
  const offB = b.addDirectChannel(a.npub, channel(a, b));
  return () => {
    open = false;
    offA();
    offB();
  };
}

/** The part of RTCDataChannel this needs (a browser's, or any compatible implementation). */
export interface DataChannelLike {
  readyState: string;
  send(data: string): void;
  close(): void;
  addEventListener(type: "message", fn: (ev: { data: unknown }) => void): void;
  addEventListener(type: "close", fn: () => void): void;
}

/** Registers an open data channel to one device of `peerUserId` with the client; returns the unregister function. */
export function dataChannelAdapter(client: DirectHost, peerUserId: string, dc: DataChannelLike, peerDeviceId?: string): () => void {
  const channel: DirectChannel = {
    send: (f) => {
      if (dc.readyState === "open") dc.send(f);
      else throw new Error("data channel not open");
    },
    close: () => dc.close(),
  };
  const off = client.addDirectChannel(peerUserId, channel, peerDeviceId);
  dc.addEventListener("message", (ev) => {
    if (typeof ev.data === "string") void client.handleDirectFrame(ev.data, peerUserId);
  });
  dc.addEventListener("close", () => off());
  return off;
}
