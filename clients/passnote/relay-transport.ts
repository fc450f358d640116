// The Passnote transport over an edge relay's sync room (docs/passnote.md): connect to
// /passnote/v2/<room>, answer the challenge with the room key's Ed25519 signature, then exchange
// binary messages prefixed with 8-byte peer ids.
//
// Staying steady over a real relay (the decisions are in docs/passnote.md):
// - Pacing: every message leaves through a token bucket set below the relay's published rate
//   (`limits.common` of the information document, GET /): half its burst, 90 % of its rate. A
//   well-behaved peer is then never refused.
// - Backpressure: send() resolves once the frame is on the socket (its token taken) and the
//   socket's buffer is under highWaterBytes. Until then the frame counts in the engine's send
//   window of 16, so the window is real: a fast engine waits instead of filling the wire.
// - A refusal anyway (`rate_limited`): the pacer stops for retry_after_ms, and `refused` tells the
//   peer, which repairs by anti-entropy (see PassnotePeer): the relay does not say which frame it
//   refused, and resending one late would break per-peer order.
// - connect() gives up after connectTimeoutMs; a connection lost later is re-opened with
//   exponential backoff and full jitter (the peers present are reported lost, then met afresh);
//   an idle socket is kept alive with {"type":"ping"}, and one silent for two intervals is dropped
//   and re-opened.
import { roomKeys, signJoin, joinPeerFrame, splitPeerFrame, type RoomKeys } from "../../shared/passnote/room";
import { roomServerMessageSchema } from "../../shared/passnote/messages";
import { COMMON_LIMITS } from "../../shared/limits";
import { TokenBucket } from "../../shared/rate-limit";
import { Listeners, type Transport, type TransportEvents } from "./transport";
import { webSocketClass } from "../websocket";
import { assertNever } from "../assert-never";

interface RelayRate {
  /** Messages per second the relay allows one socket. */
  perSecond: number;
  /** Its burst. */
  burst: number;
}

export interface RelayTransportOptions {
  /** ws:// or wss:// base URL of the relay. */
  relayUrl: string;
  /** The roster key (without identities: the passphrase key) the room is derived from. */
  rosterKey: Uint8Array;
  WebSocket?: typeof WebSocket;
  /** Bytes buffered on the socket above which send() waits before resolving (default 256 KiB). */
  highWaterBytes?: number;
  /** The relay's rate; default: read from its information document (else this build's limits). */
  rate?: RelayRate;
  /** Milliseconds to be welcomed before an attempt fails (default 10 s). */
  connectTimeoutMs?: number;
  /** Re-open a lost connection (default true). */
  reconnect?: boolean;
  /** Backoff of reconnection attempts: the first delay's ceiling and the largest (default 500 ms, 30 s). */
  backoffMs?: { base: number; max: number };
  /** Idle milliseconds before a keepalive ping (default 30 s); silent for twice that: dropped. */
  keepaliveMs?: number;
}

/**
 * A connection that failed or was refused. `code` is the relay's error code when it said why
 * (`banned`, `room_full`, `rate_limited`, ...), else the close code or a word (`timeout`);
 * `closeCode` is the WebSocket close code, when the socket closed.
 */
export class RelayTransportError extends Error {
  constructor(
    message: string,
    readonly code?: number | string,
    readonly closeCode?: number,
  ) {
    super(message);
    this.name = "RelayTransportError";
  }
}

/** Pacing margin below the relay's published rate: a share of its burst and of its rate. */
const PACING = { burstShare: 0.5, rateShare: 0.9 } as const;

/** Close codes after which reconnecting cannot help (the key is wrong). */
const FINAL_CLOSES = new Set([4001]);

/** The relay's published rate (GET / of its information document), or this build's limits. */
async function relayRate(relayUrl: string, timeoutMs = 5_000): Promise<RelayRate> {
  const fallback = { perSecond: COMMON_LIMITS.rate_messages_per_second, burst: COMMON_LIMITS.rate_burst };
  try {
    const res = await fetch(relayUrl.replace(/^ws/, "http").replace(/\/$/, "") + "/", { signal: AbortSignal.timeout(timeoutMs) });
    const info = (await res.json()) as { limits?: { common?: { rate_messages_per_second?: unknown; rate_burst?: unknown } } };
    const c = info.limits?.common;
    if (
      typeof c?.rate_messages_per_second === "number" &&
      typeof c.rate_burst === "number" &&
      c.rate_messages_per_second > 0 &&
      c.rate_burst >= 1
    ) {
      return { perSecond: c.rate_messages_per_second, burst: c.rate_burst };
    }
  } catch {
    // unreachable or not a relay's document: this build's limits
  }
  return fallback;
}

export class RelayTransport implements Transport {
  private readonly listeners = new Listeners();
  private readonly known = new Set<string>();
  private ws: WebSocket | undefined;
  private closedByUs = false;
  private attempt = 0;
  private keepalive: ReturnType<typeof setInterval> | undefined;
  private lastHeard = Date.now();
  private readonly bucket: TokenBucket;
  private readonly perSecond: number;
  /** The pacer: messages wait here, in order, for a token. */
  private pacing: Promise<void> = Promise.resolve();
  private pausedUntil = 0;
  self: string | undefined;
  /** Error codes the relay answered with (for diagnostics and tests). */
  readonly errors: string[] = [];
  /** Connections opened (1 + reconnections). */
  connections = 0;
  /** Pongs received (keepalive). */
  pongs = 0;

  private constructor(
    private readonly opts: RelayTransportOptions,
    private readonly keys: RoomKeys,
    rate: RelayRate,
  ) {
    this.perSecond = rate.perSecond * PACING.rateShare;
    this.bucket = new TokenBucket(Math.max(1, Math.floor(rate.burst * PACING.burstShare)), this.perSecond);
  }

  /** Connects and joins; resolves once welcomed, rejects when the relay refuses, cannot be reached or does not welcome in time. */
  static async connect(opts: RelayTransportOptions): Promise<RelayTransport> {
    webSocketClass(opts.WebSocket, "RelayTransport.connect({ ..., WebSocket })"); // fails at once, saying why, on Node 20
    const t = new RelayTransport(opts, roomKeys(opts.rosterKey), opts.rate ?? (await relayRate(opts.relayUrl)));
    await t.open();
    t.startKeepalive();
    return t;
  }

  peers(): string[] {
    return [...this.known];
  }

  async send(to: string, frame: Uint8Array): Promise<void> {
    await this.paced();
    const ws = this.ws;
    if (ws?.readyState !== 1) throw new RelayTransportError("not connected");
    ws.send(joinPeerFrame(to, frame));
    // Backpressure: the frame stays in the send window until the socket's buffer drains.
    const high = this.opts.highWaterBytes ?? 256 * 1024;
    while (ws.bufferedAmount > high && ws.readyState === 1) await sleep(5);
  }

  subscribe(l: Partial<TransportEvents>): () => void {
    return this.listeners.add(l);
  }

  close(): void {
    this.closedByUs = true;
    if (this.keepalive) clearInterval(this.keepalive);
    try {
      this.ws?.close(1000, "bye");
    } catch {
      // already closing
    }
  }

  // ---- pacing -------------------------------------------------------------------------------------

  /** Waits, in order, for a token of the pacer (and for any retry_after_ms the relay asked for). */
  private paced(): Promise<void> {
    const turn = this.pacing.then(async () => {
      for (;;) {
        const now = Date.now();
        if (now < this.pausedUntil) {
          await sleep(this.pausedUntil - now);
          continue;
        }
        if (this.bucket.take(now)) return;
        await sleep(Math.max(1, this.bucket.retryAfterMs(1)));
      }
    });
    this.pacing = turn.catch(() => undefined);
    return turn;
  }

  private refusedByRelay(retryAfterMs: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, Date.now() + retryAfterMs);
    this.listeners.emit("refused", retryAfterMs);
  }

  // ---- connection ---------------------------------------------------------------------------------

  /** One attempt: resolves once welcomed; rejects on refusal, failure or timeout. */
  private open(): Promise<void> {
    const WS = webSocketClass(this.opts.WebSocket, "RelayTransport.connect({ ..., WebSocket })");
    const ws = new WS(`${this.opts.relayUrl.replace(/\/$/, "")}/passnote/v2/${this.keys.roomId}`);
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    this.lastHeard = Date.now();
    return new Promise((resolve, reject) => {
      let welcomed = false;
      /** The relay's error frame before its welcome: why it is refusing. */
      let refusal: { code: string; message: string } | undefined;
      const timer = setTimeout(() => {
        if (welcomed) return;
        reject(new RelayTransportError(`not welcomed within ${this.connectTimeout} ms`, "timeout"));
        try {
          ws.close(1000, "timeout");
        } catch {
          // never opened
        }
      }, this.connectTimeout);
      ws.addEventListener("message", (ev) => {
        if (this.ws !== ws) return;
        this.lastHeard = Date.now();
        if (typeof ev.data !== "string") {
          const split = splitPeerFrame(new Uint8Array(ev.data as ArrayBuffer));
          if (split) this.listeners.emit("frame", split.peer, split.frame);
          return;
        }
        let parsed: ReturnType<typeof roomServerMessageSchema.safeParse>;
        try {
          parsed = roomServerMessageSchema.safeParse(JSON.parse(ev.data));
        } catch {
          return;
        }
        if (!parsed.success) return;
        const m = parsed.data;
        switch (m.type) {
          case "challenge":
            ws.send(JSON.stringify({ type: "join", sig: signJoin(this.keys, m.challenge) }));
            break;
          case "welcome":
            welcomed = true;
            clearTimeout(timer);
            this.attempt = 0;
            this.connections++;
            this.self = m.peer;
            for (const p of m.peers) this.known.add(p);
            resolve();
            this.listeners.emit("welcome", m.peer, m.peers);
            break;
          case "join":
            this.known.add(m.peer);
            this.listeners.emit("join", m.peer);
            break;
          case "leave":
            this.known.delete(m.peer);
            this.listeners.emit("leave", m.peer);
            break;
          case "pong":
            this.pongs++;
            break;
          case "error":
            this.errors.push(m.code);
            if (!welcomed) refusal = { code: m.code, message: m.message };
            if (m.code === "rate_limited") this.refusedByRelay(m.retry_after_ms ?? 1000 / this.perSecond);
            break;
          default:
            assertNever(m, "relay frame");
        }
      });
      ws.addEventListener("close", (ev) => {
        clearTimeout(timer);
        if (!welcomed)
          reject(
            refusal
              ? new RelayTransportError(`the relay refused the connection: ${refusal.code} (${refusal.message})`, refusal.code, ev.code)
              : new RelayTransportError(`the relay closed the connection (${ev.code} ${ev.reason})`, ev.code, ev.code),
          );
        if (this.ws === ws) this.lost(ev.code, ev.reason, welcomed);
      });
      ws.addEventListener("error", () => {
        if (!welcomed) reject(new RelayTransportError("could not connect to the relay"));
      });
    });
  }

  private get connectTimeout(): number {
    return this.opts.connectTimeoutMs ?? 10_000;
  }

  /** The socket is gone: report its peers lost, then reconnect (or report the close). */
  private lost(code: number, reason: string, wasWelcomed: boolean): void {
    if (!wasWelcomed) {
      // A failed attempt: connect() rejected it, or the reconnection loop tries again.
      if (this.connections === 0) this.listeners.emit("close", code, reason);
      return;
    }
    for (const p of [...this.known]) {
      this.known.delete(p);
      this.listeners.emit("leave", p);
    }
    this.self = undefined;
    const again = !this.closedByUs && (this.opts.reconnect ?? true) && !FINAL_CLOSES.has(code);
    if (!again) {
      if (this.keepalive) clearInterval(this.keepalive);
      this.listeners.emit("close", code, reason);
      return;
    }
    void this.reconnect();
  }

  private async reconnect(): Promise<void> {
    while (!this.closedByUs) {
      const { base, max } = this.opts.backoffMs ?? { base: 500, max: 30_000 };
      const ceiling = Math.min(max, base * 2 ** this.attempt);
      this.attempt++;
      await sleep(Math.random() * ceiling); // full jitter
      if (this.closedByUs) return;
      try {
        await this.open();
        return;
      } catch (e) {
        if (e instanceof RelayTransportError && typeof e.code === "number" && FINAL_CLOSES.has(e.code)) {
          this.listeners.emit("close", e.code, e.message);
          return;
        }
      }
    }
  }

  private startKeepalive(): void {
    const every = this.opts.keepaliveMs ?? 30_000;
    this.keepalive = setInterval(
      () => {
        const ws = this.ws;
        if (ws?.readyState !== 1) return;
        const idle = Date.now() - this.lastHeard;
        if (idle >= 2 * every) {
          ws.close(4000, "keepalive: no answer"); // lost() reconnects
          return;
        }
        if (idle >= every) ws.send('{"type":"ping"}');
      },
      Math.max(10, Math.floor(every / 2)),
    );
    (this.keepalive as { unref?: () => void }).unref?.();
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
