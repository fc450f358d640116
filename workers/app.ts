// Routing only: the first middleware (settings, request id, client address, the request's log
// line), the relay's own documents, and the routers mounted as sub-apps. Protocol work is in
// shared/, state and sockets in durable-objects/, server-only rendering in server/.
import { Hono } from "hono";
import { relayInfo } from "../server/info";
import { OPENAPI_PATH, openApiDocument } from "../server/openapi";
import { hostIdentity, vapidKeys } from "../server/relay-objects";
import type { Settings } from "../server/settings";
import { base64urlEncode } from "../shared/encoding";
import { log } from "../server/log";
import { serveAsset } from "./assets";
import { hostingRoutes, MINCA_PATH } from "./hosting";
import { adminRoutes } from "./admin-api";
import { addressBlock } from "./policy";
import { OBJECT_PATHS, objectRequestLimit } from "./client-limits";
import { anyOrigin, escapeHtml, httpError, methodNotAllowed, type RelayHono } from "./http";
import { MAILBOX_PATH, mailboxRoutes } from "./mailbox";
import { HEALTH_ROUTE, requestScope } from "./request-log";
import { socketRoutes } from "./sockets";
import { UNAVAILABLE_RETRY_SECONDS, outOfResources } from "./out-of-resources";
import { statusRoutes } from "./status";

export const app = new Hono<RelayHono>();

app.use(requestScope);
// The health probe first: before the block list (read from an object when its cache is stale),
// every bucket and every cap, so it answers while the relay refuses work and reaches no object.
app.get(HEALTH_ROUTE, (c) => c.text("ok"));
app.use(addressBlock);
// One bucket per client across every name (workers/client-limits.ts), before any object starts.
for (const path of OBJECT_PATHS) app.use(path, objectRequestLimit);

app.get("/", async (c) => {
  // Browser apps on other origins read the VAPID key and limits from it.
  anyOrigin(c);
  c.header("Vary", "Accept");
  const s = c.var.settings;
  const info = relayInfo({
    name: s.relayName,
    vapidPublicKey: await vapidPublicKey(c.env, s),
    host: await mincaHost(c.env, s),
    hostAdmission: s.admission.mode,
    storage: s.storage,
  });
  const accept = c.req.header("accept") ?? "";
  if (accept.includes("application/json") || !accept.includes("text/html")) return c.json(info);
  return c.html(homePage(info));
});

/** GET / in a browser: what the relay is, where to go next, and the information document. */
function homePage(info: { name: string; software: string; version: string }): string {
  const link = (href: string, text: string, what: string) => `<li><a href="${href}">${text}</a>: ${what}</li>`;
  return (
    `<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
    `<title>${escapeHtml(info.name)}</title><link rel="icon" href="data:,">` +
    `<style>body{font:16px system-ui,sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem}pre{background:#f4f4f4;padding:1rem;overflow:auto}</style>` +
    `<h1>${escapeHtml(info.name)}</h1><p>${escapeHtml(info.software)} ${escapeHtml(info.version)}: the relays of Tally, Passnote and Minca.</p>` +
    `<ul>` +
    link("/demo/", "Demo", "two Tally users chatting in this browser") +
    link("/connect/", "Minca home", "connect a Minca account to this relay") +
    link("/status", "Status", "connections, messages and storage (needs the admin token when one is set)") +
    link(OPENAPI_PATH, "OpenAPI document", "every HTTPS endpoint") +
    `</ul><p>Programs ask for <code>application/json</code> to get the information document below.</p>` +
    `<pre>${escapeHtml(JSON.stringify(info, null, 2))}</pre>`
  );
}

// Browsers ask for an icon on every page: none, without a 404 in the log.
app.get("/favicon.ico", (c) => {
  c.header("Cache-Control", "public, max-age=86400");
  return c.body(null, 204);
});

// The HTTPS endpoints as OpenAPI 3.1 (server/openapi.ts): the same for every request, built once.
let openApi: object | undefined;
app.get(OPENAPI_PATH, (c) => {
  anyOrigin(c);
  openApi ??= openApiDocument();
  return c.json(openApi);
});

// The admin API answers POSTs at / and at the Tally endpoint (before their 405s).
app.route("/", adminRoutes);
app.all("/", (c) => methodNotAllowed(c, ["GET", "POST"]));
for (const path of [OPENAPI_PATH, HEALTH_ROUTE, "/favicon.ico"]) app.all(path, (c) => methodNotAllowed(c, ["GET"]));

app.route("/", socketRoutes);
app.route(`${MAILBOX_PATH}/:topic`, mailboxRoutes);
app.route(MINCA_PATH, hostingRoutes);
app.route("/", statusRoutes);

/** The VAPID public key for the information document; null when it cannot be had. */
async function vapidPublicKey(env: Env, settings: Settings): Promise<string | null> {
  try {
    return base64urlEncode((await vapidKeys(env, settings)).publicKey);
  } catch (err) {
    log.error("no VAPID key", { err });
    return null;
  }
}

/** The Minca host's did and name for the information document; null when it cannot be had. */
async function mincaHost(env: Env, settings: Settings): Promise<{ did: string; name: string } | null> {
  try {
    return await hostIdentity(env, settings);
  } catch (err) {
    log.error("no Minca host key", { err });
    return null;
  }
}

app.notFound(async (c) => (await serveAsset(c)) ?? httpError(c, 404, "not_found", "no such endpoint"));

app.onError((err, c) => {
  if (outOfResources(err)) {
    // Refuse, never stop: the client comes back later; what the relay holds keeps working.
    log.warn("out of resources: refused with 503", { err, method: c.req.method, route: c.req.routePath });
    c.header("Retry-After", String(UNAVAILABLE_RETRY_SECONDS));
    return httpError(c, 503, "unavailable", "the relay is out of resources for now; retry later");
  }
  log.error("unhandled", { err, method: c.req.method, path: new URL(c.req.url).pathname });
  return httpError(c, 500, "internal_error", "the relay failed to handle this request");
});
