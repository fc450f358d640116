// Routing only: every path, its upgrade checks and the HTTP error shape. Protocol work is in
// shared/, state and sockets in durable-objects/.
import { Hono, type Context } from "hono";
import { httpErrorBody, type ErrorCode } from "../shared/errors";
import { relayInfo } from "../shared/info";
import { isNpub, npubDecode } from "../shared/tally/keys";
import { RELAY_HOST_HEADER, TALLY_USER_HEADER } from "../durable-objects/tally-user";
import { MINCA_ROOM_HEADER } from "../durable-objects/minca-room";
import { isRoomId as isMincaRoomId } from "../shared/minca/code";
import type { Env } from "./env";
import { PASSNOTE_ROOM_HEADER } from "../durable-objects/passnote-room";
import { isRoomId } from "../shared/passnote/room";
import { mountMailbox } from "./mailbox";
import { mountStatus } from "./status";
import { vapidKeys } from "../durable-objects/relay-keys";
import { base64urlEncode } from "../shared/encoding";

export const app = new Hono<{ Bindings: Env }>();

export function httpError(c: Context, status: number, code: ErrorCode, message: string): Response {
  return c.json(httpErrorBody(code, message), status as 400);
}

function isUpgrade(req: Request): boolean {
  return req.headers.get("upgrade")?.toLowerCase() === "websocket";
}

app.get("/", async (c) => {
  const info = relayInfo({ name: c.env.RELAY_NAME ?? "edge-relay", vapidPublicKey: await vapidPublicKey(c.env) });
  const accept = c.req.header("accept") ?? "";
  if (accept.includes("application/json") || !accept.includes("text/html")) return c.json(info);
  return c.html(
    `<!doctype html><meta charset="utf-8"><title>${escapeHtml(info.name)}</title>` +
      `<h1>${escapeHtml(info.name)}</h1><p>${info.software} ${info.version}. ` +
      `Ask for <code>application/json</code> to get the information document.</p>` +
      `<pre>${escapeHtml(JSON.stringify(info, null, 2))}</pre>`,
  );
});

app.get("/healthz", (c) => c.text("ok"));

/**
 * A WebSocket endpoint whose last path segment names one Durable Object: the key is checked
 * (400), the method (405) and the upgrade (426), then the request goes to the object with the
 * headers that tell it who it is (a cold-started object does not know its own name).
 */
function socketRoute(
  path: string,
  check: { valid: (key: string) => boolean; invalid: string },
  target: (env: Env, key: string, url: URL) => { stub: { fetch(req: Request): Promise<Response> }; headers: Record<string, string> },
): void {
  app.all(path, async (c) => {
    if (c.req.method !== "GET") return httpError(c, 405, "method_not_allowed", "use GET with Upgrade: websocket");
    const key = c.req.param("key") ?? "";
    if (!check.valid(key)) return httpError(c, 400, "bad_request", check.invalid);
    if (!isUpgrade(c.req.raw)) return httpError(c, 426, "upgrade_required", "this endpoint speaks WebSocket");
    const { stub, headers } = target(c.env, key, new URL(c.req.url));
    const h = new Headers(c.req.raw.headers);
    for (const [k, v] of Object.entries(headers)) h.set(k, v);
    return stub.fetch(new Request(c.req.raw, { headers: h }));
  });
}

socketRoute("/tally/v1/:key", { valid: isNpub, invalid: "the path must end in a valid npub" }, (env, npub, url) => {
  const hex = npubDecode(npub);
  return {
    stub: env.TALLY_USER.get(env.TALLY_USER.idFromName(hex)),
    headers: { [TALLY_USER_HEADER]: hex, [RELAY_HOST_HEADER]: url.host },
  };
});

socketRoute("/passnote/v2/:key", { valid: isRoomId, invalid: "the path must end in a room id: base64url of 32 bytes" }, (env, room) => ({
  stub: env.PASSNOTE_ROOM.get(env.PASSNOTE_ROOM.idFromName(room)),
  headers: { [PASSNOTE_ROOM_HEADER]: room },
}));

socketRoute("/minca/v1/rooms/:key", { valid: isMincaRoomId, invalid: "the room must match ^b[a-z2-7]{52}$" }, (env, room) => ({
  stub: env.MINCA_ROOM.get(env.MINCA_ROOM.idFromName(room)),
  headers: { [MINCA_ROOM_HEADER]: room },
}));
mountMailbox(app);
mountStatus(app);

/** The VAPID public key for the information document; null when it cannot be had. */
async function vapidPublicKey(env: Env): Promise<string | null> {
  try {
    return base64urlEncode((await vapidKeys(env)).publicKey);
  } catch (err) {
    console.error("no VAPID key", err);
    return null;
  }
}

app.notFound((c) => httpError(c, 404, "not_found", "no such endpoint"));

app.onError((err, c) => {
  console.error("unhandled", err);
  return httpError(c, 500, "internal_error", "the relay failed to handle this request");
});

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
