// The base of every relay object that holds WebSockets, on top of the stored-object base
// (stored-object.ts: schema, meta, name, alarm, stats). It owns the socket entry points (fetch,
// webSocketMessage, webSocketClose, webSocketError, alarm) and turns them into a few hooks, so
// that each object reads as "what this room does": a table of handlers, one per message type.
//
// What it does for every socket object, the one documented way:
// - accepts hibernatable WebSockets, keeps per-socket state in the socket attachment;
// - answers {"type":"ping"} with {"type":"pong"} without waking the object;
// - bounds frame size (close 1009; before authentication, common.max_unauthenticated_frame_bytes)
//   and JSON nesting (invalid_message, common.max_json_depth), rate-limits per socket
//   (rate_limited, then close 4029) and per client across reconnects (socket-rates.ts);
// - parses a frame, validates it against its handler's zod schema and dispatches by `type`,
//   answering invalid_message / unknown_type and keeping the connection open;
// - closes sockets that have not authenticated within the timeout with 4001, and bounds how many
//   are kept, per object, per client and across the relay (unauthenticated.ts); a socket whose
//   register / join is being checked is never closed to make room;
// - answers close frames;
// - counts connections, messages and errors for the operator's status page, the same way for
//   every object (StatsReporter: batched in memory, sent off the message path).
import type * as z from "zod";
import { formatIssue, rateLimitedError, socketError, type ErrorCode, type SocketError } from "../../shared/errors";
import { CLOSE_CODES, COMMON_LIMITS } from "../../shared/limits";
import { parkedAll } from "./parked-across";
import type { Migration } from "../../migrations/index";
import { httpErrorBody } from "../../shared/errors";
import { utf8ByteLength } from "../../shared/encoding";
import { noteIdle } from "../../server/live";
import type { StatsGauges, StatsProtocol } from "../../server/stats";
import { log } from "../../server/log";
import { jsonNestsDeeper } from "../../shared/client-json";
import { StoredObject } from "./stored-object";
import { UnauthenticatedSockets } from "./unauthenticated";
import { SocketRates } from "./socket-rates";
import { SocketTraffic } from "./socket-traffic";

export { CLIENT_HEADER, REFUSED_HEADER, clientOf, requestIdOf } from "./client-header";

/** What every socket's attachment holds; objects extend it. */
export interface BaseAttachment {
  /** The client it came from (clientOf): its rate state outlives the socket, for the client's next one. */
  client?: string;
  /** The request id of its upgrade (requestIdOf): its session line and authentication failure carry it. */
  requestId?: string;
  /** Milliseconds since the epoch when the socket was accepted. */
  openedAt: number;
  /** Whether the socket has authenticated (registered / joined). */
  authed: boolean;
}

interface Route<Self, A extends BaseAttachment, S extends z.ZodType = z.ZodType> {
  schema: S;
  /** Whether the socket must have authenticated first. Default true. */
  authed?: boolean;
  /** `raw` is the frame as it arrived, for handlers that must forward parts of it unchanged. */
  // A method, so that a route of a narrower schema (and of the subclass as `this`) fits `Routes`:
  // the base hands each handler only what its own schema parsed.
  handle(this: Self, ws: WebSocket, msg: z.infer<S>, att: A, raw: string): void | Promise<void>;
}

export type Routes<Self, A extends BaseAttachment> = Record<string, Route<Self, A>>;

/** The `type`s of a client-to-relay union M that have a route: the literal ones, but ping (the base answers it). */
type RoutedType<M extends { type: string }> = Exclude<LiteralType<M>, "ping">;
/** Each member's `type` when it is one literal (a member whose `type` is any string is routed by none). */
type LiteralType<M> = M extends { type: infer T } ? (T extends string ? (string extends T ? never : T) : never) : never;

/**
 * An object's routes declared against its client-to-relay union M (shared/<protocol>/messages):
 * one route per routed `type`, each with a schema of that message. A missing or an extra handler
 * is a type error.
 */
export type RoutesOf<Self, A extends BaseAttachment, M extends { type: string }> = {
  [T in RoutedType<M>]: Route<Self, A, z.ZodType<Extract<M, { type: T }>>>;
};

/** Declares a route with its message type inferred from the schema. */
export function route<Self, A extends BaseAttachment, S extends z.ZodType>(r: Route<Self, A, S>): Route<Self, A, S> {
  return r;
}

export interface SocketObjectOptions {
  migrations: readonly Migration[];
  /** The `meta` key under which objects of this class stored their own name before the runtime told it. */
  nameKey?: string;
  /** Largest text frame (bytes of UTF-8) accepted; larger closes the socket with 1009. */
  maxFrameBytes: number;
  /** Largest binary frame accepted; 0 refuses binary frames with invalid_message. */
  maxBinaryBytes?: number;
  /**
   * What happens to a message that needs authentication on a socket that has not authenticated:
   * "ignore" drops it unanswered (Tally: "before registered, only ping is answered"),
   * "error" answers auth_failed.
   */
  beforeAuth: "ignore" | "error";
  /** Seconds a socket may stay unauthenticated. */
  authTimeoutSeconds?: number;
  /** Unauthenticated sockets kept while none may be crowded out (default common.max_unauthenticated_sockets_per_object_in_grace). */
  maxUnauthenticatedInGrace?: number;
  /** The protocol this object's counts are reported under (the status page); none: not counted. */
  protocol?: StatsProtocol;
}

const PING = '{"type":"ping"}';
const PONG = '{"type":"pong"}';

/**
 * The base of the objects that hold sockets. `A` is a socket's attachment, `O` the object's
 * relay-to-client frames (its protocol's union in shared/): `send` takes only those, or the error
 * frame every protocol shares.
 */
export abstract class SocketObject<Env, A extends BaseAttachment, O extends { type: string } = { type: string }> extends StoredObject<Env> {
  private readonly options: SocketObjectOptions;
  /** The sockets that have not authenticated: their timeout and their cap. */
  protected readonly parked: UnauthenticatedSockets;
  /** Per-socket and per-client rate state (in memory). */
  private readonly socketRates = new SocketRates();
  /**
   * Each socket's attachment as last serialized, so that a message does not deserialize every
   * socket's: attachments change only through setAttachment (always a new object, never mutated in
   * place). After hibernation the map is empty and the serialized attachment is read again.
   */
  private readonly attachments = new WeakMap<WebSocket, A>();

  protected abstract readonly routes: Routes<this, A>;

  constructor(ctx: DurableObjectState, env: Env, options: SocketObjectOptions) {
    super(ctx, env, { migrations: options.migrations, protocol: options.protocol, nameKey: options.nameKey });
    this.options = options;
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(PING, PONG));
    this.parked = new UnauthenticatedSockets(
      {
        unauthenticated: () => this.unauthenticated(),
        objectId: () => this.ctx.id.toString(),
        refuse: (ws, frame, code, reason) => {
          this.send(ws, frame);
          this.close(ws, code, reason);
        },
        timedOut: (ws) => this.logAuthFailure(ws, "authentication timed out"),
        refused: (n) => {
          this.stats.count("errors", n);
          this.stats.changed();
        },
      },
      (options.authTimeoutSeconds ?? COMMON_LIMITS.auth_timeout_seconds) * 1000,
      options.maxUnauthenticatedInGrace,
    );
    // Woken (after hibernation or eviction) with sockets that have not authenticated: the timer
    // that would close them was lost with the old instance, so arm it again.
    this.parked.rearm(false);
  }

  // ---- hooks -------------------------------------------------------------------------------

  /** A socket was accepted; send the challenge here. */
  protected abstract onConnect(ws: WebSocket, att: A): void | Promise<void>;
  /** A socket closed or failed (after the base answered the close frame). */
  protected onClose(_ws: WebSocket, _att: A): void | Promise<void> {}
  /** A binary frame within maxBinaryBytes. */
  protected onBinary(ws: WebSocket, _data: ArrayBuffer, _att: A): void | Promise<void> {
    this.sendError(ws, "invalid_message", "binary frames are not accepted on this endpoint");
  }
  /**
   * A JSON object frame whose `type` is in no route (protocols whose clients choose their own
   * types, as Minca's network messages). Default: the unknown_type error.
   */
  protected onUnrouted(ws: WebSocket, obj: Record<string, unknown> & { type: string }, _att: A, _raw: string): void | Promise<void> {
    const id = typeof obj.id === "string" ? obj.id : undefined;
    this.sendError(ws, "unknown_type", `unknown message type: ${obj.type.slice(0, 64)}`, id);
  }
  /** What this object holds now, for the status page, besides its open sockets. */
  protected socketGauges(): StatsGauges {
    return {};
  }
  protected statsGauges(): StatsGauges {
    return { connections: this.ctx.getWebSockets().length, ...this.socketGauges() };
  }

  // ---- helpers for subclasses ----------------------------------------------------------------

  /** Accepts a WebSocket upgrade with its initial attachment and returns the 101 response. */
  protected async accept(att: A, tags: string[] = []): Promise<Response> {
    const wait = this.socketRates.connect(att.client, this.rateClock());
    if (wait !== null) return this.tooMany(`too many new connections from this client; retry in ${wait} s`, wait);
    if (!att.authed) {
      // The relay-wide bound, which holds in shared mode too (common.max_unauthenticated_sockets).
      if (parkedAll() >= COMMON_LIMITS.max_unauthenticated_sockets) {
        this.stats.count("errors");
        return Response.json(httpErrorBody("unavailable", "too many unauthenticated connections to the relay; retry shortly"), {
          status: 503,
          headers: { "retry-after": String(COMMON_LIMITS.unavailable_retry_seconds) },
        });
      }
      const parkedWait = this.parked.admit(att.client, this.rateClock());
      if (parkedWait !== null)
        return this.tooMany(`too many unauthenticated connections from this client; retry in ${parkedWait} s`, parkedWait);
    }
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    this.ctx.acceptWebSocket(server, tags);
    this.setAttachment(server, att);
    this.traffic.of(server);
    this.stats.count("connections_opened");
    if (!att.authed) this.parked.accepted(att.openedAt);
    await this.onConnect(server, att);
    return new Response(null, { status: 101, webSocket: client });
  }

  private tooMany(message: string, wait: number): Response {
    this.stats.count("errors");
    return Response.json(httpErrorBody("rate_limited", message), { status: 429, headers: { "retry-after": String(wait) } });
  }

  protected attachment(ws: WebSocket): A {
    let att = this.attachments.get(ws);
    if (att === undefined) {
      att = ws.deserializeAttachment() as A;
      if (att) this.attachments.set(ws, att);
    }
    return att;
  }

  protected setAttachment(ws: WebSocket, att: A): void {
    const before = this.attachments.get(ws);
    ws.serializeAttachment(att);
    this.attachments.set(ws, att);
    if (att.authed && before && !before.authed) this.parked.rearm();
  }

  /** Open sockets whose attachment passes the filter. */
  protected sockets(filter: (att: A) => boolean = () => true): Array<{ ws: WebSocket; att: A }> {
    const out: Array<{ ws: WebSocket; att: A }> = [];
    for (const ws of this.ctx.getWebSockets()) {
      if (ws.readyState !== WebSocket.OPEN) continue;
      const att = this.attachment(ws) as A | null;
      if (att && filter(att)) out.push({ ws, att });
    }
    return out;
  }

  /** Sends one JSON message of this object's protocol; false when the socket could not take it. */
  protected send(ws: WebSocket, msg: O | SocketError): boolean {
    return this.sendRaw(ws, JSON.stringify(msg));
  }

  protected sendRaw(ws: WebSocket, data: string | ArrayBuffer | ArrayBufferView): boolean {
    try {
      ws.send(data);
      this.traffic.sent(ws);
      return true;
    } catch {
      return false;
    }
  }

  protected sendError(ws: WebSocket, code: ErrorCode, message: string, id?: string): void {
    this.stats.count("errors");
    this.send(ws, socketError(code, message, id));
  }

  protected close(ws: WebSocket, code: number, reason: string): void {
    try {
      ws.close(code, reason.slice(0, 120));
    } catch {
      // already closed
    }
  }

  // ---- RPC common to every object ----------------------------------------------------------

  /**
   * Closes every socket of this object with `code` (1001 when the relay shuts down); returns how
   * many it closed. Each close runs the object's own onClose, as a client's close would.
   */
  async shutdownSockets(code: number = CLOSE_CODES.going_away, reason = "relay shutting down"): Promise<number> {
    let n = 0;
    for (const ws of this.ctx.getWebSockets()) {
      if (ws.readyState !== WebSocket.OPEN) continue;
      this.close(ws, code, reason);
      n++;
    }
    return n;
  }

  /** RPC, the admin API's blockip: closes every open socket of `client` (1008); how many. */
  async closeClient(client: string): Promise<number> {
    let n = 0;
    for (const ws of this.ctx.getWebSockets()) {
      if (ws.readyState !== WebSocket.OPEN || this.attachment(ws)?.client !== client) continue;
      this.close(ws, CLOSE_CODES.policy, "address blocked by the relay's operator");
      n++;
    }
    return n;
  }

  // ---- runtime entry points ------------------------------------------------------------------

  async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    const att = this.attachment(ws);
    if (!att) return;
    this.traffic.of(ws).in++;
    this.stats.count("messages");
    // The frame bounds hold at once, before the rate limit: a frame dropped as rate limited was
    // never measured, so an oversized one on a socket past its bucket used to be answered
    // rate_limited and left open instead of closed with 1009.
    if (!att.authed && frameBytes(message, COMMON_LIMITS.max_unauthenticated_frame_bytes) > COMMON_LIMITS.max_unauthenticated_frame_bytes) {
      return this.close(ws, CLOSE_CODES.too_large, "frame too large before authentication");
    }
    const maxBinary = this.options.maxBinaryBytes ?? 0;
    if (
      typeof message !== "string"
        ? maxBinary > 0 && message.byteLength > maxBinary
        : utf8Length(message, this.options.maxFrameBytes) > this.options.maxFrameBytes
    ) {
      return this.close(ws, CLOSE_CODES.too_large, "frame too large");
    }
    if (!this.admitMessage(ws, att)) return;
    if (typeof message !== "string") {
      if (maxBinary === 0) return this.sendError(ws, "invalid_message", "binary frames are not accepted on this endpoint");
      if (!att.authed) return this.beforeAuth(ws);
      return this.onBinary(ws, message, att);
    }
    if (jsonNestsDeeper(message, COMMON_LIMITS.max_json_depth)) {
      return this.sendError(ws, "invalid_message", `frame nests deeper than ${COMMON_LIMITS.max_json_depth} levels`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(message);
    } catch {
      return this.sendError(ws, "invalid_message", "frame is not JSON");
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      return this.sendError(ws, "invalid_message", "frame is not a JSON object");
    }
    const obj = parsed as Record<string, unknown>;
    const id = typeof obj.id === "string" ? obj.id : undefined;
    if (typeof obj.type !== "string") return this.sendError(ws, "invalid_message", "frame has no string `type`", id);
    if (obj.type === "ping") return void this.sendRaw(ws, PONG);
    const r = Object.hasOwn(this.routes, obj.type) ? this.routes[obj.type] : undefined;
    if (!r) {
      try {
        return await this.onUnrouted(ws, obj as Record<string, unknown> & { type: string }, att, message);
      } catch (err) {
        log.error(`unrouted ${obj.type.slice(0, 64)} failed`, { err });
        return this.sendError(ws, "internal_error", "the relay could not handle this message", id);
      }
    }
    if ((r.authed ?? true) && !att.authed) return this.beforeAuth(ws);
    const result = r.schema.safeParse(obj);
    if (!result.success) {
      return this.sendError(ws, "invalid_message", `${obj.type}: ${formatIssue(result.error)}`, id);
    }
    // A register / join is being checked: its socket is not crowded out meanwhile (unauthenticated.ts).
    const checking = !att.authed && r.authed === false;
    if (checking) this.parked.checking(ws, true);
    try {
      await r.handle.call(this, ws, result.data, att, message);
    } catch (err) {
      log.error(`handler ${obj.type} failed`, { err });
      this.sendError(ws, "internal_error", "the relay could not handle this message", id);
    } finally {
      if (checking) this.parked.checking(ws, false);
    }
  }

  async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    // Answer the close frame (1005/1006 are not sendable codes).
    this.close(ws, code === 1005 || code === 1006 || code < 1000 ? CLOSE_CODES.normal : code, reason);
    await this.closed(ws, code);
  }

  async webSocketError(ws: WebSocket, _error: unknown): Promise<void> {
    this.close(ws, CLOSE_CODES.internal_error, "error");
    await this.closed(ws, CLOSE_CODES.internal_error);
  }

  // ---- internals -----------------------------------------------------------------------------

  private closedSockets = new WeakSet<WebSocket>();
  /** Frames each socket received and was sent, for its session's log line (socket-traffic.ts). */
  private readonly traffic = new SocketTraffic();

  /** A socket failed to authenticate: one log line (the client as the relay sees it; never the user, room or key). */
  protected logAuthFailure(ws: WebSocket, reason: string): void {
    const att = this.attachment(ws) as A | null;
    log.warn("authentication failed", { object: this.constructor.name, reason, client: att?.client, request_id: att?.requestId });
  }

  private unauthenticated(): Array<{ ws: WebSocket; openedAt: number; client?: string }> {
    const out: Array<{ ws: WebSocket; openedAt: number; client?: string }> = [];
    for (const ws of this.ctx.getWebSockets()) {
      if (ws.readyState !== WebSocket.OPEN) continue;
      const att = this.attachment(ws) as A | null;
      if (att && !att.authed) out.push({ ws, openedAt: att.openedAt, client: att.client });
    }
    return out;
  }

  private async closed(ws: WebSocket, code: number): Promise<void> {
    if (this.closedSockets.has(ws)) return;
    this.closedSockets.add(ws);
    this.stats.changed();
    const att = this.attachment(ws);
    this.traffic.logSession(this.constructor.name, ws, att, code);
    if (att && !att.authed) this.parked.rearm();
    this.socketRates.closed(ws, att?.client);
    if (att) await this.onClose(ws, att);
    if (!this.ctx.getWebSockets().some((s) => s !== ws && s.readyState === WebSocket.OPEN)) {
      noteIdle(this.ctx.id.toString());
    }
  }

  private beforeAuth(ws: WebSocket): void {
    if (this.options.beforeAuth === "error") this.sendError(ws, "auth_failed", "authenticate first");
  }

  /** The time the rate limits and the parked sockets' grace read (a test subclass holds it still while it feeds a flood). */
  protected rateClock(): number {
    return Date.now();
  }

  /** The per-socket rate limit (socket-rates.ts); false when the message is dropped. */
  private admitMessage(ws: WebSocket, att: A): boolean {
    const r = this.socketRates.take(ws, att.client, att.authed, this.rateClock());
    if (r.ok) return true;
    // Every refused message is answered, with the wait until the rate allows the next one.
    this.stats.count("errors");
    this.send(ws, rateLimitedError(r.closing ? "too many messages; closing" : "too many messages; slow down", r.retryAfterMs));
    if (r.closing) this.close(ws, CLOSE_CODES.rate_limited, "rate limited");
    return false;
  }
}

/** Bytes of a frame (a string's as UTF-8), counting no further than `cap + 1`. */
function frameBytes(message: string | ArrayBuffer, cap: number): number {
  return typeof message === "string" ? utf8Length(message, cap) : message.byteLength;
}

/** UTF-8 length of a string, counting no further than `cap + 1`. */
export function utf8Length(s: string, cap: number): number {
  if (s.length * 3 <= cap) return s.length; // cannot exceed the cap
  if (s.length > cap) return s.length; // already over (each char is >= 1 byte)
  return utf8ByteLength(s);
}
