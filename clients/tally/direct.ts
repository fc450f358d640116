// Direct channels (seed 6.1): the client sends envelopes and receipts over any channel that
// carries string frames. A WebRTC data channel plugs in with `dataChannelAdapter`; tests use
// `connectInMemory`, two clients joined as if by a data channel.
import type { DirectChannel, TallyClient } from "./client";

/** Joins two clients (of two users, or two devices of one) with an in-memory channel each way. */
export function connectInMemory(a: TallyClient, b: TallyClient): () => void {
  let open = true;
  const offA = a.addDirectChannel(b.npub, {
    send: (f) => {
      if (open) queueMicrotask(() => void b.handleDirectFrame(f));
    },
    close: () => void (open = false),
  });
  const offB = b.addDirectChannel(a.npub, {
    send: (f) => {
      if (open) queueMicrotask(() => void a.handleDirectFrame(f));
    },
    close: () => void (open = false),
  });
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

/** Registers an open data channel to `peerUserId` with the client; returns the unregister function. */
export function dataChannelAdapter(client: TallyClient, peerUserId: string, dc: DataChannelLike): () => void {
  const channel: DirectChannel = {
    send: (f) => {
      if (dc.readyState === "open") dc.send(f);
      else throw new Error("data channel not open");
    },
    close: () => dc.close(),
  };
  const off = client.addDirectChannel(peerUserId, channel);
  dc.addEventListener("message", (ev) => {
    if (typeof ev.data === "string") void client.handleDirectFrame(ev.data);
  });
  dc.addEventListener("close", () => off());
  return off;
}
