// The WebSocket endpoints: each names one Durable Object by its last path segment. The Worker
// checks the key (400), the method (405) and the upgrade (426), then hands the request to the
// object with the headers that tell it who the client is and which host it reached (server/object-headers.ts).
import { Hono, type Context } from "hono";
import { settingsOf } from "../server/settings";
import { objectAt, objectId } from "../server/objects";
import { CLIENT_HEADER, REFUSED_HEADER, RELAY_HOST_HEADER, UPGRADE_REQUEST_ID_HEADER } from "../server/object-headers";
import { isCrowded, isDraining, noteLive } from "../server/live";
import { tallyRefusal } from "../server/policy";
import { refusalSocket } from "../server/refusal-socket";
import { CLOSE_CODES, COMMON_LIMITS } from "../shared/limits";
import { currentPolicy } from "./policy";
import { isRoomId as isMincaRoomId } from "../shared/minca/code";
import { isRoomId } from "../shared/passnote/room";
import { isNpub, npubDecode } from "../shared/tally/keys";
import { httpError, isUpgrade, methodNotAllowed, type RelayHono } from "./http";

/** Bindings of Durable Object namespaces whose objects take client WebSockets. */
export type SocketBinding = "TALLY_USER" | "PASSNOTE_ROOM" | "MINCA_ROOM";

export const socketRoutes = new Hono<RelayHono>();

function socketRoute(
  path: string,
  check: { valid: (key: string) => boolean; invalid: string; methods?: Array<"GET" | "POST"> },
  target: (key: string, url: URL) => { binding: SocketBinding; name: string; headers: Record<string, string> },
): void {
  const param = path.slice(path.lastIndexOf(":") + 1);
  socketRoutes.all(path, async (c) => {
    // HEAD is GET without the body (RFC 9110 section 9.3.2): never an upgrade, so 426 (after the key check).
    if (c.req.method !== "GET" && c.req.method !== "HEAD") return methodNotAllowed(c, check.methods ?? ["GET"], " with Upgrade: websocket");
    const key = c.req.param(param) ?? "";
    if (!check.valid(key)) return httpError(c, 400, "bad_request", check.invalid);
    if (!isUpgrade(c.req.raw) || c.req.method === "HEAD") return httpError(c, 426, "upgrade_required", "this endpoint speaks WebSocket");
    const { binding, name, headers } = target(key, new URL(c.req.url));
    if (binding === "TALLY_USER") {
      // The operator's bans and allowlist (the admin API), before the object is woken: answered on
      // a socket (error frame, close 1008), as the object refuses a ban it notices at register,
      // so the client reads `banned` / `not_allowed` and stops retrying (server/refusal-socket.ts).
      const no = tallyRefusal(await currentPolicy(c.env), name);
      if (no) return refusalSocket(no.code, no.message, CLOSE_CODES.policy, no.code === "banned" ? "banned" : "not allowed");
    }
    const h = new Headers(c.req.raw.headers);
    for (const [k, v] of Object.entries(headers)) h.set(k, v);
    h.set(CLIENT_HEADER, c.var.client);
    h.set(UPGRADE_REQUEST_ID_HEADER, c.var.requestId);
    return upgradeTo(c, binding, objectId(c.env, binding, name), new Request(c.req.raw, { headers: h }));
  });
}

/**
 * Hands a WebSocket upgrade to the object `id` of namespace `binding`. A self-hosted relay notes
 * the object (for closing its sockets on shutdown) and refuses upgrades once it is shutting down.
 */
// Takes any context with the bindings (a test drives it with a self-hosted env of its own).
export async function upgradeTo<E extends { Bindings: Env }>(
  c: Context<E>,
  binding: SocketBinding,
  id: DurableObjectId,
  req: Request,
): Promise<Response> {
  const read = settingsOf(c.env);
  const tracking = read.ok && read.settings.selfHosted;
  if (tracking && isDraining()) {
    c.header("retry-after", String(COMMON_LIMITS.unavailable_retry_seconds));
    return httpError(c, 503, "unavailable", "the relay is shutting down; reconnect shortly");
  }
  if (tracking && isCrowded()) {
    c.header("retry-after", String(COMMON_LIMITS.unavailable_retry_seconds));
    c.header("connection", "close");
    return httpError(c, 503, "unavailable", "the relay is at its limit of open connections; reconnect later");
  }
  const res = await objectAt(c.env, binding, id).fetch(req);
  // Only objects that accepted a socket are noted: refused upgrades leave nothing behind.
  // A refusal travels as a 101 too (an error frame, then a close, on a socket no object keeps).
  if (tracking && res.status === 101 && !res.headers.has(REFUSED_HEADER)) noteLive(id.toString(), binding);
  return res;
}

// POST is the admin API's (workers/admin-api.ts), mounted before this route.
socketRoute("/tally/v1/:npub", { valid: isNpub, invalid: "the path must end in a valid npub", methods: ["GET", "POST"] }, (npub, url) => {
  const hex = npubDecode(npub);
  return { binding: "TALLY_USER", name: hex, headers: { [RELAY_HOST_HEADER]: url.host } };
});

socketRoute("/passnote/v2/:room", { valid: isRoomId, invalid: "the path must end in a room id: base64url of 32 bytes" }, (room) => ({
  binding: "PASSNOTE_ROOM",
  name: room,
  headers: {},
}));

socketRoute("/minca/v1/rooms/:room", { valid: isMincaRoomId, invalid: "the room must match ^b[a-z2-7]{52}$" }, (room) => ({
  binding: "MINCA_ROOM",
  name: room,
  headers: {},
}));
