// The Passnote transport over an edge relay's sync room (DESIGN section 5): connect to
// /passnote/v2/<room>, answer the challenge with the room key's Ed25519 signature, then exchange
// binary messages prefixed with 8-byte peer ids.
import { roomKeys, signJoin, joinPeerFrame, splitPeerFrame, type RoomKeys } from "../../shared/passnote/room";
import { roomServerMessageSchema } from "../../shared/passnote/messages";
import { Listeners, type Transport, type TransportEvents } from "./transport";
import { relayBase } from "../relay-url";

export interface RelayTransportOptions {
  /** The relay: ws(s)://, http(s):// or a bare host (clients/relay-url.ts). */
  relayUrl: string;
  /** The roster key (without identities: the passphrase key) the room is derived from. */
  rosterKey: Uint8Array;
  WebSocket?: typeof WebSocket;
  /** Bytes buffered on the socket above which send() waits before resolving. */
  highWaterBytes?: number;
}

export class RelayTransportError extends Error {
  constructor(
    message: string,
    readonly code?: number | string,
  ) {
    super(message);
  }
}

export class RelayTransport implements Transport {
  private readonly listeners = new Listeners();
  private readonly known = new Set<string>();
  self: string | undefined;
  /** Error codes the relay answered with (for diagnostics and tests). */
  readonly errors: string[] = [];

  private constructor(
    private readonly ws: WebSocket,
    private readonly highWater: number,
  ) {}

  /** Connects and joins; resolves once welcomed, rejects when the relay refuses the join. */
  static connect(opts: RelayTransportOptions): Promise<RelayTransport> {
    const keys: RoomKeys = roomKeys(opts.rosterKey);
    const WS = opts.WebSocket ?? WebSocket;
    const ws = new WS(`${relayBase(opts.relayUrl, "ws")}/passnote/v2/${keys.roomId}`);
    ws.binaryType = "arraybuffer";
    const t = new RelayTransport(ws, opts.highWaterBytes ?? 1 << 20);
    return new Promise((resolve, reject) => {
      let welcomed = false;
      ws.addEventListener("message", (ev) => {
        if (typeof ev.data !== "string") {
          const split = splitPeerFrame(new Uint8Array(ev.data as ArrayBuffer));
          if (split) t.listeners.emit("frame", split.peer, split.frame);
          return;
        }
        let parsed;
        try {
          parsed = roomServerMessageSchema.safeParse(JSON.parse(ev.data));
        } catch {
          return;
        }
        if (!parsed.success) return;
        const m = parsed.data;
        switch (m.type) {
          case "challenge":
            ws.send(JSON.stringify({ type: "join", sig: signJoin(keys, m.challenge) }));
            break;
          case "welcome":
            welcomed = true;
            t.self = m.peer;
            for (const p of m.peers) t.known.add(p);
            resolve(t);
            t.listeners.emit("welcome", m.peer, m.peers);
            break;
          case "join":
            t.known.add(m.peer);
            t.listeners.emit("join", m.peer);
            break;
          case "leave":
            t.known.delete(m.peer);
            t.listeners.emit("leave", m.peer);
            break;
          case "error":
            t.errors.push(m.code);
            break;
        }
      });
      ws.addEventListener("close", (ev) => {
        if (!welcomed) reject(new RelayTransportError(`the relay closed the connection (${ev.code} ${ev.reason})`, ev.code));
        t.listeners.emit("close", ev.code, ev.reason);
      });
      ws.addEventListener("error", () => {
        if (!welcomed) reject(new RelayTransportError("could not connect to the relay"));
      });
    });
  }

  peers(): string[] {
    return [...this.known];
  }

  async send(to: string, frame: Uint8Array): Promise<void> {
    if (this.ws.readyState !== 1) throw new RelayTransportError("not connected");
    this.ws.send(joinPeerFrame(to, frame));
    // Backpressure: resolve once the socket's buffer is back under the high-water mark.
    while (this.ws.bufferedAmount > this.highWater && this.ws.readyState === 1) {
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  subscribe(l: Partial<TransportEvents>): () => void {
    return this.listeners.add(l);
  }

  close(): void {
    try {
      this.ws.close(1000, "bye");
    } catch {
      // already closing
    }
  }
}
