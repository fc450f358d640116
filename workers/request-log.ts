// The first middleware of every request: its id (also the x-request-id answer header), the
// settings (a bad one refuses the request, server/settings.ts), the client address as the relay
// sees it, and one log line when the answer is ready:
//
//   {"ts":"…","level":"info","msg":"request","request_id":"…","method":"GET","route":"/minca/v1/mailbox/:topic",
//    "status":200,"duration_ms":3,"client":"203.0.113.7"}
//
// `route` is the pattern that answered, never the path: paths carry npubs, topics and room ids,
// which no log line holds. Requests no route takes (404, static assets) log as route "other".
//
// The request id: Cloudflare's ray id there (cf-ray, set by Cloudflare's edge); self-hosted behind
// the proxy named in TRUSTED_PROXY_HEADER, the proxy's x-request-id when it sends a plain one (so
// one id follows a request through the proxy's log and the relay's); else a fresh random id. A
// client's own x-request-id is never taken on a direct connection, as no client header is.
import type { MiddlewareHandler } from "hono";
import { countRequest } from "../server/counters";
import { problemsText, settingsOf, type Settings } from "../server/settings";
import { httpErrorBody } from "../shared/errors";
import { log, setLogLevel } from "../server/log";
import { drainBody } from "./body";
import { clientAddress } from "./client-address";
import type { C, RelayHono } from "./http";
import { withRequestId } from "./request-context";

const REQUEST_ID_HEADER = "x-request-id";
const PLAIN_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The id that names this request (see above). */
function requestIdOf(headers: Headers, settings: Pick<Settings, "selfHosted" | "trustedProxyHeader"> | null): string {
  const ray = settings && !settings.selfHosted ? headers.get("cf-ray") : null;
  if (ray && PLAIN_ID.test(ray)) return ray;
  const proxied = settings?.selfHosted && settings.trustedProxyHeader ? headers.get(REQUEST_ID_HEADER) : null;
  if (proxied && PLAIN_ID.test(proxied)) return proxied;
  return crypto.randomUUID();
}

/** The route pattern that answered, for log lines and counters (bounded: one per route). */
function routeOf(c: C): string {
  const p = c.req.routePath;
  return !p || p === "/*" ? "other" : p;
}

/** The health probe's route: logged only when it does not answer 200. */
export const HEALTH_ROUTE = "/healthz";

/** Bad settings already logged (once per distinct message, per isolate). */
const loggedBad = new Set<string>();

export const requestScope: MiddlewareHandler<RelayHono> = async (c, next) => {
  const started = Date.now();
  const read = settingsOf(c.env);
  const requestId = requestIdOf(c.req.raw.headers, read.ok ? read.settings : null);
  c.set("requestId", requestId);
  await withRequestId(requestId, async () => {
    if (!read.ok) {
      // A bad setting refuses every request, /healthz included (server/settings.ts).
      const message = problemsText(read.problems);
      if (!loggedBad.has(message)) {
        loggedBad.add(message);
        log.error("bad setting", { problems: read.problems });
      }
      c.res = c.json(httpErrorBody("bad_setting", message), 500);
    } else {
      c.set("settings", read.settings);
      setLogLevel(read.settings.logLevel);
      const client = clientAddress(c.req.raw.headers, c.env);
      if (client === null) {
        c.res = c.json(httpErrorBody("bad_request", "the trusted client address header does not hold an address"), 400);
      } else {
        c.set("client", client);
        await next();
      }
      // A body no route read (a GET with a body) is drained before the answer goes, so it arrives whole.
      await drainBody(c.req.raw);
    }
    setRequestIdHeader(c, requestId);
    const status = c.res.status;
    const route = routeOf(c);
    const ms = Date.now() - started;
    countRequest(route, status, ms);
    // A health probe that passes writes no line (one probe every 5 s is 17,000 lines a day); it is
    // still counted in /metrics, and a failing one is logged.
    if (!(route === HEALTH_ROUTE && status === 200))
      log.info("request", { method: c.req.method, route, status, duration_ms: ms, client: c.var.client ?? null });
  });
};

function setRequestIdHeader(c: C, id: string): void {
  if (c.res.status === 101) return; // a socket's answer: the socket's own lines name it
  try {
    c.res.headers.set(REQUEST_ID_HEADER, id);
  } catch {
    // immutable headers (an answer fetched from an object): copy them
    c.res = new Response(c.res.body, c.res);
    c.res.headers.set(REQUEST_ID_HEADER, id);
  }
}
