// One Tally client's connection to a relay (docs/tally.md): open the socket, answer the
// challenge with a signed register, keep the socket alive with pings, and come back after a loss
// with a jittered backoff. What the frames mean is the client's business (client.ts).
import { makeAuthEventWith } from "../../shared/tally/auth";
import type { TallySigner } from "../../shared/tally/signer";
import { serverMessageSchema, type ServerMessage } from "../../shared/tally/messages";
import { CLOSE_CODES } from "../../shared/limits";
import { CLIENT_LIMITS } from "./limits";
import { relayBase } from "../relay-url";

export interface ConnectionOptions {
  relayUrl: string;
  /** Signs the register answer (the key may be elsewhere: a browser extension). */
  signer: TallySigner;
  /** The signer failed to sign a register answer: the socket is given up and tried again later. */
  onSignerFailed?(error: unknown): void;
  npub: string;
  acks: boolean;
  /** Reconnect after a lost connection. */
  reconnect: boolean;
  /** The WebSocket constructor; undefined where the platform has none (Node 20: pass the `ws` package's). */
  WebSocket: typeof WebSocket | undefined;
  /** Milliseconds between pings on a registered socket. Default CLIENT_LIMITS.ping_interval_ms. */
  pingIntervalMs?: number;
  /** A ping unanswered for this long means the socket is dead: it is closed and reopened. Default CLIENT_LIMITS.pong_timeout_ms. */
  pongTimeoutMs?: number;
  /** A socket not registered this long after it opened is given up. Default CLIENT_LIMITS.connect_timeout_ms. */
  connectTimeoutMs?: number;
}

interface ConnectionHandlers {
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
 * other close, 1008 too_many_devices included (a device slot frees when another closes), is retried,
 * unless the relay refused the register for good first (FINAL_REFUSALS: banned, not_allowed).
 */
export function isFatalClose(code: number): boolean {
  return code === CLOSE_CODES.auth_failed;
}

/** The close code WebSocket APIs report for a connection that ended without a close frame. */
const ABNORMAL_CLOSE = 1006;

/** What a client without a WebSocket constructor says (Node 20 has no global WebSocket). */
export const NO_WEBSOCKET_MESSAGE =
  "no WebSocket here (Node 20 has none): install the `ws` package and pass it: " +
  'import { WebSocket } from "ws"; new TallyClient({ ..., WebSocket })';

/** Refusals of a register that trying again will not change: the client stops reconnecting. */
export const FINAL_REFUSALS: ReadonlySet<string> = new Set(["banned", "not_allowed"]);

/**
 * The relay refused this client, saying why: `code` is the relay's error code (`banned`,
 * `not_allowed`, `auth_failed`, ...), `closeCode` the WebSocket close code that followed. The
 * Tally client's `connect()` rejects with it.
 */
export class TallyRelayError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly closeCode?: number,
  ) {
    super(`the relay refused this client: ${code} (${message})${closeCode !== undefined ? `, closed ${closeCode}` : ""}`);
    this.name = "TallyRelayError";
  }
}

export class RelayConnection {
  /** The relay's error frame on the current socket before it registered (a refusal), if any. */
  refusal: { code: string; message: string } | undefined;
  private ws: WebSocket | undefined;
  private attempt = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private pingTimer: ReturnType<typeof setInterval> | undefined;
  private pongDeadline: ReturnType<typeof setTimeout> | undefined;
  private registerDeadline: ReturnType<typeof setTimeout> | undefined;
  private closedByUser = false;
  private registered = false;
  /** rate_limited: nothing is sent before this time (ms since the epoch); frames wait in `held`. */
  private holdUntil = 0;
  private held: string[] = [];
  private holdTimer: ReturnType<typeof setTimeout> | undefined;

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

  /** Opens the connection (if not open). Throws when there is no WebSocket to open it with. */
  start(): void {
    if (typeof this.opts.WebSocket !== "function") throw new Error(NO_WEBSOCKET_MESSAGE);
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
    const ws = this.ws;
    if (!ws) return;
    try {
      ws.close(CLOSE_CODES.normal, "bye");
    } catch {
      // not open yet, or already closing
    }
    // A socket that never opened may fire no close event (Node's built-in WebSocket): closed now.
    if (ws.readyState !== 1) this.onClose(ws, CLOSE_CODES.normal, "bye");
  }

  /**
   * Sends a frame; false when the socket is not open. After a rate_limited answer, frames wait
   * (in order, on this socket) until the relay's retry_after_ms has passed.
   */
  send(msg: unknown): boolean {
    const ws = this.ws;
    if (ws?.readyState !== 1) return false;
    const frame = JSON.stringify(msg);
    if (this.held.length > 0 || Date.now() < this.holdUntil) {
      this.held.push(frame);
      this.scheduleRelease(ws);
      return true;
    }
    ws.send(frame);
    return true;
  }

  /** The relay said rate_limited: send nothing more for `ms` (at least one millisecond). */
  private hold(ws: WebSocket, ms: number): void {
    this.holdUntil = Math.max(this.holdUntil, Date.now() + Math.max(1, ms));
    this.scheduleRelease(ws);
  }

  private scheduleRelease(ws: WebSocket): void {
    if (this.holdTimer) return;
    this.holdTimer = setTimeout(
      () => {
        this.holdTimer = undefined;
        if (this.ws !== ws || ws.readyState !== 1) return;
        if (Date.now() < this.holdUntil) return this.scheduleRelease(ws);
        // Released in order; a new rate_limited answer holds the rest again.
        while (this.held.length > 0 && Date.now() >= this.holdUntil) ws.send(this.held.shift()!);
        if (this.held.length > 0) this.scheduleRelease(ws);
      },
      Math.max(0, this.holdUntil - Date.now()),
    );
  }

  private clearHold(): void {
    if (this.holdTimer) clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    this.holdUntil = 0;
    this.held = [];
  }

  private openSocket(): void {
    let ws: WebSocket;
    try {
      ws = new this.opts.WebSocket!(this.endpoint());
    } catch (err) {
      // A URL the platform refuses: as a failed connection (the app sees the close).
      this.handlers.onClosed(ABNORMAL_CLOSE, `cannot open the socket: ${(err as Error).message}`, false);
      return;
    }
    this.ws = ws;
    this.registered = false;
    this.refusal = undefined;
    ws.onmessage = (ev) => {
      if (this.ws === ws && typeof ev.data === "string") this.onFrame(ws, ev.data);
    };
    ws.onclose = (ev) => this.onClose(ws, ev.code, ev.reason);
    // Node's built-in WebSocket (undici) fires `error` and no `close` on a refused connection: an
    // error ends the socket here, whichever event comes (onClose runs once per socket).
    ws.onerror = () => this.abandon(ws, ABNORMAL_CLOSE, "connection failed");
    // A socket not registered in time (a relay that accepts TCP and never answers) is given up.
    if (this.registerDeadline) clearTimeout(this.registerDeadline);
    this.registerDeadline = setTimeout(() => {
      if (this.ws === ws && !this.registered) this.abandon(ws, ABNORMAL_CLOSE, "no registration in time");
    }, this.opts.connectTimeoutMs ?? CLIENT_LIMITS.connect_timeout_ms);
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
      void this.answerChallenge(ws, msg.challenge);
      return;
    }
    if (msg.type === "registered") {
      this.registered = true;
      if (this.registerDeadline) clearTimeout(this.registerDeadline);
      this.registerDeadline = undefined;
      this.attempt = 0;
      this.startPings(ws);
    }
    if (msg.type === "error" && !this.registered) this.refusal = { code: msg.code, message: msg.message };
    if (msg.type === "error" && msg.code === "rate_limited")
      this.hold(ws, msg.retry_after_ms ?? CLIENT_LIMITS.rate_limited_default_wait_ms);
    if (msg.type === "pong" && this.pongDeadline) {
      clearTimeout(this.pongDeadline);
      this.pongDeadline = undefined;
    }
    this.handlers.onMessage(msg);
  }

  /**
   * Registers with a signed answer to the challenge. Signing may take a while (a browser extension
   * may prompt): the answer goes only on the socket that asked, if it is still this connection's
   * and open; a signer that fails gives the socket up (tried again with the reconnect backoff).
   */
  private async answerChallenge(ws: WebSocket, challenge: string): Promise<void> {
    let auth: unknown;
    try {
      auth = await makeAuthEventWith({ signer: this.opts.signer, challenge, relayUrl: relayBase(this.opts.relayUrl, "ws") });
    } catch (err) {
      this.opts.onSignerFailed?.(err);
      this.abandon(ws, ABNORMAL_CLOSE, "signer failed");
      return;
    }
    if (this.ws !== ws || ws.readyState !== 1) return;
    ws.send(JSON.stringify({ type: "register", user_id: this.opts.npub, auth, acks: this.opts.acks }));
  }

  private startPings(ws: WebSocket): void {
    this.stopPings();
    const every = this.opts.pingIntervalMs ?? CLIENT_LIMITS.ping_interval_ms;
    const wait = this.opts.pongTimeoutMs ?? CLIENT_LIMITS.pong_timeout_ms;
    this.pingTimer = setInterval(() => {
      if (this.ws !== ws || ws.readyState !== 1 || this.pongDeadline || Date.now() < this.holdUntil) return;
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
    if (this.ws !== ws) return;
    this.onClose(ws, code, reason); // first: closing may fire `error` again, synchronously
    ws.onerror = null;
    ws.onclose = null;
    ws.onmessage = null;
    try {
      ws.close();
    } catch {
      // already closing
    }
  }

  private onClose(ws: WebSocket, code: number, reason: string): void {
    if (this.ws !== ws) return;
    this.ws = undefined;
    this.registered = false;
    this.stopPings();
    this.clearHold();
    if (this.registerDeadline) clearTimeout(this.registerDeadline);
    this.registerDeadline = undefined;
    const final = isFatalClose(code) || (this.refusal !== undefined && FINAL_REFUSALS.has(this.refusal.code));
    const again = !this.closedByUser && this.opts.reconnect && !final;
    if (again) {
      this.reconnectTimer = setTimeout(() => this.openSocket(), reconnectDelay(this.attempt));
      this.attempt++;
    }
    this.handlers.onClosed(code, reason, again);
  }
}
