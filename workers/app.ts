// Routing only: every path, its upgrade checks and the HTTP error shape. Protocol work is in
// shared/, state and sockets in durable-objects/.
import { Hono, type Context } from "hono";
import { httpErrorBody, type ErrorCode } from "../shared/errors";
import { relayInfo } from "../shared/info";
import { isNpub, npubDecode } from "../shared/tally/keys";
import { RELAY_HOST_HEADER, TALLY_USER_HEADER } from "../durable-objects/tally-user";
import type { Env } from "./env";
import { mountMailbox } from "./mailbox";
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

app.all("/tally/v1/:npub", async (c) => {
  if (c.req.method !== "GET") return httpError(c, 405, "method_not_allowed", "use GET with Upgrade: websocket");
  const npub = c.req.param("npub");
  if (!isNpub(npub)) return httpError(c, 400, "bad_request", "the path must end in a valid npub");
  if (!isUpgrade(c.req.raw)) return httpError(c, 426, "upgrade_required", "this endpoint speaks WebSocket");
  const hex = npubDecode(npub);
  const stub = c.env.TALLY_USER.get(c.env.TALLY_USER.idFromName(hex));
  const headers = new Headers(c.req.raw.headers);
  headers.set(TALLY_USER_HEADER, hex);
  headers.set(RELAY_HOST_HEADER, new URL(c.req.url).host);
  return stub.fetch(new Request(c.req.raw, { headers }));
});

mountMailbox(app);

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
