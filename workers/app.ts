// Routing only: every path, its upgrade checks and the HTTP error shape. Protocol work is in
// shared/, state and sockets in durable-objects/.
import { admissionOf } from "../shared/minca/admission";
import { Hono, type Context } from "hono";
import { httpErrorBody, type ErrorCode } from "../shared/errors";
import { relayInfo } from "../shared/info";
import { storageTotals } from "../shared/storage";
import { OPENAPI_PATH, openApiDocument } from "../shared/openapi";
import { isNpub, npubDecode } from "../shared/tally/keys";
import { isRoomId as isMincaRoomId } from "../shared/minca/code";
import { isDraining, noteLive } from "../durable-objects/base/live";
import { CLIENT_HEADER, REFUSED_HEADER, RELAY_HOST_HEADER } from "../durable-objects/base/client-header";
import { clientAddress } from "./client-address";
import { drainBody } from "./body";
import { isRoomId } from "../shared/passnote/room";
import { mountMailbox } from "./mailbox";
import { mountHosting } from "./hosting";
import { mountStatus } from "./status";
import { serveAsset } from "./assets";
import { hostIdentity, vapidKeys } from "../durable-objects/relay/relay-keys";
import { base64urlEncode } from "../shared/encoding";
import { log } from "../shared/log";

export const app = new Hono<{ Bindings: Env }>();

declare module "hono" {
  interface ContextVariableMap {
    /** Names the request in log lines (shared/log.ts). */
    requestId: string;
  }
}

export function httpError(c: Context, status: number, code: ErrorCode, message: string): Response {
  return c.json(httpErrorBody(code, message), status as 400);
}

/** 405 with the methods the path takes in `Allow` (RFC 9110 section 15.5.6); GET implies HEAD. */
export function methodNotAllowed(c: Context, methods: Array<"GET" | "POST" | "DELETE">, note = ""): Response {
  c.header("Allow", methods.flatMap((m) => (m === "GET" ? ["GET", "HEAD"] : [m])).join(", "));
  return httpError(c, 405, "method_not_allowed", `use ${methods.join(" or ")}${note}`);
}

// Every log line about a request names it: Cloudflare's ray id where there is one, else a fresh id.
app.use(async (c, next) => {
  c.set("requestId", c.req.header("cf-ray") ?? crypto.randomUUID());
  await next();
  // A body no route read (a GET with a body) is drained before the answer goes, so it arrives whole.
  await drainBody(c.req.raw);
});

function isUpgrade(req: Request): boolean {
  return req.headers.get("upgrade")?.toLowerCase() === "websocket";
}

/** Documents that browser apps on any origin read (they hold nothing private). */
function anyOrigin(c: Context): void {
  c.header("Access-Control-Allow-Origin", "*");
}

app.get("/", async (c) => {
  // Browser apps on other origins read the VAPID key and limits from it.
  anyOrigin(c);
  c.header("Vary", "Accept");
  const info = relayInfo({ name: c.env.RELAY_NAME ?? "edge-relay", vapidPublicKey: await vapidPublicKey(c.env), host: await mincaHost(c.env), hostAdmission: admissionOf(c.env).mode, storage: storageTotals(c.env) });
  const accept = c.req.header("accept") ?? "";
  if (accept.includes("application/json") || !accept.includes("text/html")) return c.json(info);
  return c.html(
    `<!doctype html><meta charset="utf-8"><title>${escapeHtml(info.name)}</title>` +
      `<h1>${escapeHtml(info.name)}</h1><p>${info.software} ${info.version}. ` +
      `Ask for <code>application/json</code> to get the information document.</p>` +
      `<pre>${escapeHtml(JSON.stringify(info, null, 2))}</pre>`,
  );
});

// The HTTPS endpoints as OpenAPI 3.1 (shared/openapi.ts): the same for every request, built once.
let openApi: object | undefined;
app.get(OPENAPI_PATH, (c) => {
  anyOrigin(c);
  openApi ??= openApiDocument();
  return c.json(openApi);
});

app.get("/healthz", (c) => c.text("ok"));
for (const path of ["/", OPENAPI_PATH, "/healthz"]) app.all(path, (c) => methodNotAllowed(c, ["GET"]));

/**
 * A WebSocket endpoint whose last path segment (its one parameter) names one Durable Object: the key is checked
 * (400), the method (405) and the upgrade (426), then the request goes to the object with the
 * headers that tell it who it is (a cold-started object does not know its own name).
 */
function socketRoute(
  path: string,
  check: { valid: (key: string) => boolean; invalid: string },
  target: (env: Env, key: string, url: URL) => { binding: SocketBinding; name: string; headers: Record<string, string> },
): void {
  const param = path.slice(path.lastIndexOf(":") + 1);
  app.all(path, async (c) => {
    // HEAD is GET without the body (RFC 9110 section 9.3.2): never an upgrade, so 426 (after the key check).
    if (c.req.method !== "GET" && c.req.method !== "HEAD") return methodNotAllowed(c, ["GET"], " with Upgrade: websocket");
    const key = c.req.param(param) ?? "";
    if (!check.valid(key)) return httpError(c, 400, "bad_request", check.invalid);
    if (!isUpgrade(c.req.raw) || c.req.method === "HEAD") return httpError(c, 426, "upgrade_required", "this endpoint speaks WebSocket");
    const { binding, name, headers } = target(c.env, key, new URL(c.req.url));
    const h = new Headers(c.req.raw.headers);
    for (const [k, v] of Object.entries(headers)) h.set(k, v);
    h.set(CLIENT_HEADER, clientAddress(c.req.raw.headers, c.env));
    return upgradeTo(c, binding, c.env[binding].idFromName(name), new Request(c.req.raw, { headers: h }));
  });
}

/** Bindings of Durable Object namespaces whose objects take client WebSockets. */
export type SocketBinding = "TALLY_USER" | "PASSNOTE_ROOM" | "MINCA_ROOM";

/**
 * Hands a WebSocket upgrade to the object `id` of namespace `binding`. A self-hosted relay notes
 * the object (for closing its sockets on shutdown) and refuses upgrades once it is shutting down.
 */
export async function upgradeTo(c: Context<{ Bindings: Env }>, binding: SocketBinding, id: DurableObjectId, req: Request): Promise<Response> {
  const tracking = c.env.RELAY_RUNTIME === "workerd";
  if (tracking && isDraining()) {
    c.header("retry-after", "5");
    return httpError(c, 503, "unavailable", "the relay is shutting down; reconnect shortly");
  }
  const res = await c.env[binding].get(id).fetch(req);
  // Only objects that accepted a socket are noted: refused upgrades leave nothing behind.
  // A refusal travels as a 101 too (an error frame, then a close, on a socket no object keeps).
  if (tracking && res.status === 101 && !res.headers.has(REFUSED_HEADER)) noteLive(id.toString(), binding);
  return res;
}

socketRoute("/tally/v1/:npub", { valid: isNpub, invalid: "the path must end in a valid npub" }, (_env, npub, url) => {
  const hex = npubDecode(npub);
  return { binding: "TALLY_USER", name: hex, headers: { [RELAY_HOST_HEADER]: url.host } };
});

socketRoute("/passnote/v2/:room", { valid: isRoomId, invalid: "the path must end in a room id: base64url of 32 bytes" }, (_env, room) => ({
  binding: "PASSNOTE_ROOM",
  name: room,
  headers: {},
}));

socketRoute("/minca/v1/rooms/:room", { valid: isMincaRoomId, invalid: "the room must match ^b[a-z2-7]{52}$" }, (_env, room) => ({
  binding: "MINCA_ROOM",
  name: room,
  headers: {},
}));
mountMailbox(app);
mountHosting(app);
mountStatus(app);

/** The VAPID public key for the information document; null when it cannot be had. */
async function vapidPublicKey(env: Env): Promise<string | null> {
  try {
    return base64urlEncode((await vapidKeys(env)).publicKey);
  } catch (err) {
    log.error("no VAPID key", { err });
    return null;
  }
}

/** The Minca host's did and name for the information document; null when it cannot be had. */
async function mincaHost(env: Env): Promise<{ did: string; name: string } | null> {
  try {
    return await hostIdentity(env);
  } catch (err) {
    log.error("no Minca host key", { err });
    return null;
  }
}

app.notFound(async (c) => (await serveAsset(c)) ?? httpError(c, 404, "not_found", "no such endpoint"));

app.onError((err, c) => {
  log.error("unhandled", { err, request_id: c.get("requestId"), method: c.req.method, path: new URL(c.req.url).pathname });
  return httpError(c, 500, "internal_error", "the relay failed to handle this request");
});

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
