// Routing only: the first middleware (settings, request id, client address, the request's log
// line), the relay's own documents, and the routers mounted as sub-apps. Protocol work is in
// shared/, state and sockets in durable-objects/, server-only rendering in server/.
import { Hono } from "hono";
import { relayInfo } from "../server/info";
import { OPENAPI_PATH, openApiDocument } from "../server/openapi";
import { hostIdentity, vapidKeys } from "../server/relay-objects";
import { base64urlEncode } from "../shared/encoding";
import { log } from "../shared/log";
import { serveAsset } from "./assets";
import { hostingRoutes, MINCA_PATH } from "./hosting";
import { anyOrigin, escapeHtml, httpError, methodNotAllowed, type RelayHono } from "./http";
import { MAILBOX_PATH, mailboxRoutes } from "./mailbox";
import { requestScope } from "./request-log";
import { socketRoutes } from "./sockets";
import { statusRoutes } from "./status";

export const app = new Hono<RelayHono>();

app.use(requestScope);

app.get("/", async (c) => {
  // Browser apps on other origins read the VAPID key and limits from it.
  anyOrigin(c);
  c.header("Vary", "Accept");
  const s = c.var.settings;
  const info = relayInfo({ name: s.relayName, vapidPublicKey: await vapidPublicKey(c.env), host: await mincaHost(c.env), hostAdmission: s.admission.mode, storage: s.storage });
  const accept = c.req.header("accept") ?? "";
  if (accept.includes("application/json") || !accept.includes("text/html")) return c.json(info);
  return c.html(
    `<!doctype html><meta charset="utf-8"><title>${escapeHtml(info.name)}</title>` +
      `<h1>${escapeHtml(info.name)}</h1><p>${info.software} ${info.version}. ` +
      `Ask for <code>application/json</code> to get the information document.</p>` +
      `<pre>${escapeHtml(JSON.stringify(info, null, 2))}</pre>`,
  );
});

// The HTTPS endpoints as OpenAPI 3.1 (server/openapi.ts): the same for every request, built once.
let openApi: object | undefined;
app.get(OPENAPI_PATH, (c) => {
  anyOrigin(c);
  openApi ??= openApiDocument();
  return c.json(openApi);
});

app.get("/healthz", (c) => c.text("ok"));
for (const path of ["/", OPENAPI_PATH, "/healthz"]) app.all(path, (c) => methodNotAllowed(c, ["GET"]));

app.route("/", socketRoutes);
app.route(`${MAILBOX_PATH}/:topic`, mailboxRoutes);
app.route(MINCA_PATH, hostingRoutes);
app.route("/", statusRoutes);

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
  log.error("unhandled", { err, method: c.req.method, path: new URL(c.req.url).pathname });
  return httpError(c, 500, "internal_error", "the relay failed to handle this request");
});
