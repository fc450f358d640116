// One Tally client's connection to a relay (DESIGN section 4): open the socket, answer the
// challenge with a signed register, keep the socket alive with pings, and come back after a loss
// with a jittered backoff. What the frames mean is the client's business (client.ts).
import { makeAuthEvent } from "../../shared/tally/auth";
import { serverMessageSchema, type ServerMessage } from "../../shared/tally/messages";
import { CLOSE_CODES } from "../../shared/limits";
import { CLIENT_LIMITS } from "./limits";
import { relayBase } from "../relay-url";

export interface ConnectionOptions {
  relayUrl: string;
  secretKey: Uint8Array;
  npub: string;
  acks: boolean;
  /** Reconnect after a lost connection. */
  reconnect: boolean;
  WebSocket: typeof WebSocket;
  /** Milliseconds between pings on a registered socket. Default CLIENT_LIMITS.ping_interval_ms. */
  pingIntervalMs?: number;
  /** A ping unanswered for this long means the socket is dead: it is closed and reopened. Default CLIENT_LIMITS.pong_timeout_ms. */
  pongTimeoutMs?: number;
}

export interface ConnectionHandlers {
  /** Every frame from the relay after the challenge. */
  onMessage(msg: ServerMessage): void;
  onClosed(code: number, reason: string, willReconnect: boolean): void;
}

/**
 * The delay before reconnect try `attempt` (0-based): exponential, capped, and jittered over its
 * upper half ("equal jitter"), so a relay restart does not bring every client back at one moment.
 */
export function reconnectDelay(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(CLIENT_LIMITS.reconnect_first_ms * 2 ** attempt, CLIENT_LIMITS.reconnect_max_ms);
  return Math.round(base / 2 + (random() * base) / 2);
}

/**
 * Close codes after which the client does not come back: authentication refused (4001). Every
 * other close, 1008 too_many_devices included (a device slot frees when another closes), is retried.
 */
export function isFatalClose(code: number): boolean {
  return code === CLOSE_CODES.auth_failed;
}

export class RelayConnection {
  private ws: WebSocket | undefined;
  private attempt = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private pingTimer: ReturnType<typeof setInterval> | undefined;
  private pongDeadline: ReturnType<typeof setTimeout> | undefined;
  private closedByUser = false;
  private registered = false;

  constructor(
    private readonly opts: ConnectionOptions,
    private readonly handlers: ConnectionHandlers,
  ) {}

  get socket(): WebSocket | undefined {
    return this.ws;
  }

  /** Whether the socket is open and registered. */
  get open(): boolean {
    return this.registered && this.ws?.readyState === 1;
  }

  endpoint(): string {
    return `${relayBase(this.opts.relayUrl, "ws")}/tally/v1/${this.opts.npub}`;
  }

  start(): void {
    this.closedByUser = false;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    if (this.ws && this.ws.readyState <= 1) return;
    this.openSocket();
  }

  stop(): void {
    this.closedByUser = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.stopPings();
    this.ws?.close(CLOSE_CODES.normal, "bye");
  }

  send(msg: unknown): boolean {
    const ws = this.ws;
    if (ws?.readyState !== 1) return false;
    ws.send(JSON.stringify(msg));
    return true;
  }

  private openSocket(): void {
    const ws = new this.opts.WebSocket(this.endpoint());
    this.ws = ws;
    this.registered = false;
    ws.onmessage = (ev) => {
      if (this.ws === ws && typeof ev.data === "string") this.onFrame(ws, ev.data);
    };
    ws.onclose = (ev) => this.onClose(ws, ev.code, ev.reason);
    ws.onerror = () => {
      // onclose follows
    };
  }

  private onFrame(ws: WebSocket, data: string): void {
    let msg: ServerMessage;
    try {
      const r = serverMessageSchema.safeParse(JSON.parse(data));
      if (!r.success) return;
      msg = r.data;
    } catch {
      return;
    }
    if (msg.type === "challenge") {
      const auth = makeAuthEvent({ secretKey: this.opts.secretKey, challenge: msg.challenge, relayUrl: relayBase(this.opts.relayUrl, "ws") });
      ws.send(JSON.stringify({ type: "register", user_id: this.opts.npub, auth, acks: this.opts.acks }));
      return;
    }
    if (msg.type === "registered") {
      this.registered = true;
      this.attempt = 0;
      this.startPings(ws);
    }
    if (msg.type === "pong" && this.pongDeadline) {
      clearTimeout(this.pongDeadline);
      this.pongDeadline = undefined;
    }
    this.handlers.onMessage(msg);
  }

  private startPings(ws: WebSocket): void {
    this.stopPings();
    const every = this.opts.pingIntervalMs ?? CLIENT_LIMITS.ping_interval_ms;
    const wait = this.opts.pongTimeoutMs ?? CLIENT_LIMITS.pong_timeout_ms;
    this.pingTimer = setInterval(() => {
      if (this.ws !== ws || ws.readyState !== 1 || this.pongDeadline) return;
      ws.send(JSON.stringify({ type: "ping" }));
      this.pongDeadline = setTimeout(() => {
        // No pong: a half-open socket. Give it up and come back on a fresh one.
        this.pongDeadline = undefined;
        this.abandon(ws, 4000, "pong timeout");
      }, wait);
    }, every);
  }

  private stopPings(): void {
    if (this.pingTimer) clearInterval(this.pingTimer);
    if (this.pongDeadline) clearTimeout(this.pongDeadline);
    this.pingTimer = undefined;
    this.pongDeadline = undefined;
  }

  /** Treats a socket as closed now (its close event may never come on a dead network). */
  private abandon(ws: WebSocket, code: number, reason: string): void {
    try {
      ws.close();
    } catch {
      // already closing
    }
    this.onClose(ws, code, reason);
  }

  private onClose(ws: WebSocket, code: number, reason: string): void {
    if (this.ws !== ws) return;
    this.ws = undefined;
    this.registered = false;
    this.stopPings();
    const again = !this.closedByUser && this.opts.reconnect && !isFatalClose(code);
    if (again) {
      this.reconnectTimer = setTimeout(() => this.openSocket(), reconnectDelay(this.attempt));
      this.attempt++;
    }
    this.handlers.onClosed(code, reason, again);
  }
}
