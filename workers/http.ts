// The request helpers every router shares: the HTTP error answer, 405 with Allow, an object's
// result as an answer, and "read the body within its bound, decode, parse, validate" written once.
// Routers import from here, never from app.ts (which mounts them).
import type { Context, MiddlewareHandler } from "hono";
import { countAuthFailure } from "../server/counters";
import { utf8Decode } from "../shared/encoding";
import { httpErrorBody, type ErrorCode } from "../shared/errors";
import { isTopic } from "../shared/mailbox/topic";
import { log } from "../server/log";
import type { Settings } from "../server/settings";
import type { ObjectResult } from "../durable-objects/base/result";
import { readBounded } from "./body";
import { SHARED_CLIENT } from "./client-address";

/** The Worker's Hono environment: its bindings, and what the first middleware sets. */
export interface RelayHono {
  Bindings: Env;
  Variables: {
    /** Names the request in log lines and the x-request-id header. */
    requestId: string;
    /** The relay's settings, parsed once (server/settings.ts). */
    settings: Settings;
    /** The client address as the relay sees it (workers/client-address.ts). */
    client: string;
    /** The route pattern that answered, for the request line and the counters. */
    route?: string;
  };
}

export type C = Context<RelayHono>;

export function httpError(c: Context, status: number, code: ErrorCode, message: string): Response {
  return c.json(httpErrorBody(code, message), status as 400);
}

/**
 * 401 auth_failed with its challenge, logged as a warning (route and client address, never the
 * credential presented): the operator sees who is knocking. The message is the one a socket's
 * failed authentication logs (durable-objects/base/socket-object.ts): one event, one message.
 */
export function authFailed(c: C, challenge: string, message: string, reason: string): Response {
  log.warn("authentication failed", { route: c.req.routePath, client: c.var.client, reason });
  countAuthFailure(c.req.routePath);
  c.header("WWW-Authenticate", challenge);
  return httpError(c, 401, "auth_failed", message);
}

/** 405 with the methods the path takes in `Allow` (RFC 9110 section 15.5.6); GET implies HEAD. */
export function methodNotAllowed(c: Context, methods: Array<"GET" | "POST" | "DELETE">, note = ""): Response {
  c.header("Allow", methods.flatMap((m) => (m === "GET" ? ["GET", "HEAD"] : [m])).join(", "));
  return httpError(c, 405, "method_not_allowed", `use ${methods.join(" or ")}${note}`);
}

/** Headers for answers that must not be cached (they change with every write). */
export const NO_STORE = { "Cache-Control": "no-store" } as const;

/**
 * An object's result as the answer: the error as the HTTP error (with Retry-After when it says
 * when to retry), else `ok(value)`, by default the value as JSON with `status`, not cached.
 */
export function answer<T>(c: C, r: ObjectResult<T>, ok: (value: T) => Response = (v) => c.json(v as object, 200, NO_STORE)): Response {
  if (!r.ok) {
    if (r.retryAfterSeconds !== undefined) c.header("Retry-After", String(r.retryAfterSeconds));
    return httpError(c, r.status, r.code, r.message);
  }
  return ok(r.value);
}

/**
 * A per-client limit kept by the Worker (docs/hostile.md): `waitMs` says how long the request's
 * client waits before it is served (0 or null: now). Past it, 429 rate_limited with `Retry-After`
 * (seconds) and `retry_after_ms` in the body; null when the request goes on. Not applied in shared
 * mode (no trusted client address): one bucket for everyone would let one client lock everyone out.
 */
export function clientLimited(c: C, waitMs: (client: string) => number | null, message: string): Response | null {
  if (c.var.client === SHARED_CLIENT) return null;
  const ms = waitMs(c.var.client);
  if (!ms) return null;
  c.header("Retry-After", String(Math.max(1, Math.ceil(ms / 1000))));
  return c.json({ error: { ...httpErrorBody("rate_limited", message).error, retry_after_ms: Math.ceil(ms) } }, 429);
}

type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

/**
 * The request body read within `max` bytes (413 too_large with `tooLarge` past it), decoded as
 * UTF-8 and handed to `parse` (400 `code` with its reason when it refuses). The parsed value, or
 * the answer to send.
 */
export async function readBody<T>(
  c: C,
  opts: { max: number; tooLarge: string; code: ErrorCode; parse: (text: string) => Parsed<T> },
): Promise<{ ok: true; value: T } | { ok: false; answer: Response }> {
  const body = await readBounded(c.req.raw, opts.max);
  if (body === null) return { ok: false, answer: httpError(c, 413, "too_large", opts.tooLarge) };
  let text: string;
  try {
    text = utf8Decode(body);
  } catch {
    return { ok: false, answer: httpError(c, 400, opts.code, "the body is not UTF-8") };
  }
  const parsed = opts.parse(text);
  if (!parsed.ok) return { ok: false, answer: httpError(c, 400, opts.code, parsed.reason) };
  return { ok: true, value: parsed.value };
}

/** Checks the `:topic` path parameter of every mailbox route once (400 invalid_topic). */
export const topicCheck: MiddlewareHandler<RelayHono> = async (c, next) => {
  const topic = c.req.param("topic");
  if (topic !== undefined && !isTopic(topic)) return httpError(c, 400, "invalid_topic", "topic must be 16-128 characters of [A-Za-z0-9_-]");
  await next();
};

/** The admin API's media type (NIP-86): POSTs carrying it are management calls. */
export const ADMIN_RPC_TYPE = "application/nostr+json+rpc";

export function isAdminRpc(req: Request): boolean {
  return req.method === "POST" && (req.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase() === ADMIN_RPC_TYPE;
}

/**
 * Whether the request is for the admin API's routes: a POST to `/` or to a Tally endpoint
 * (`/tally/v1/<npub>`), whatever its Content-Type (another type is answered 415 there and reaches
 * no object). Decided by the route, never by a header the client sends: a POST to any other route
 * carrying the admin API's type is an ordinary request, blocked and counted as one.
 */
export function isAdminRoute(req: Request): boolean {
  if (req.method !== "POST") return false;
  const path = new URL(req.url).pathname;
  return path === "/" || /^\/tally\/v1\/[^/]+$/.test(path);
}

export function isUpgrade(req: Request): boolean {
  return req.headers.get("upgrade")?.toLowerCase() === "websocket";
}

/** Documents that browser apps on any origin read (they hold nothing private). */
export function anyOrigin(c: Context): void {
  c.header("Access-Control-Allow-Origin", "*");
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
