// Routes of the operator's status page (docs/browser.md): GET /status (HTML), GET /status.json
// and GET /metrics (Prometheus text, shared/metrics.ts), behind the ADMIN_TOKEN bearer token when one is configured. Counts come from
// the one RelayStats object; rendering is shared/stats-page.ts.
import type { Context, Hono } from "hono";
import { relayStats } from "../durable-objects/relay/relay-stats";
import { tokenMatches, type StatusAnswer } from "../shared/stats";
import { renderStatusPage } from "../shared/stats-page";
import { METRICS_CONTENT_TYPE, renderMetrics } from "../shared/metrics";
import { httpError, methodNotAllowed } from "./app";

type C = Context<{ Bindings: Env }>;

/** Null when the request may see the page; else the 401 answer. */
function refused(c: C): Response | null {
  const token = c.env.ADMIN_TOKEN;
  if (!token) return null;
  if (tokenMatches(c.req.header("authorization"), token)) return null;
  c.header("WWW-Authenticate", 'Bearer realm="relay status"');
  return httpError(c, 401, "auth_failed", "the status page and /metrics need Authorization: Bearer <ADMIN_TOKEN>");
}

export function mountStatus(app: Hono<{ Bindings: Env }>): void {
  app.get("/status.json", async (c) => {
    const no = refused(c);
    if (no) return no;
    c.header("Cache-Control", "no-store");
    return c.json({ open: !c.env.ADMIN_TOKEN, ...(await relayStats(c.env).snapshot()) } satisfies StatusAnswer);
  });
  app.get("/metrics", async (c) => {
    const no = refused(c);
    if (no) return no;
    c.header("Cache-Control", "no-store");
    c.header("Content-Type", METRICS_CONTENT_TYPE);
    return c.body(renderMetrics(await relayStats(c.env).snapshot()));
  });
  app.get("/status", async (c) => {
    const no = refused(c);
    if (no) return no;
    c.header("Cache-Control", "no-store");
    const snapshot = await relayStats(c.env).snapshot();
    return c.html(renderStatusPage(snapshot, { name: c.env.RELAY_NAME ?? "edge-relay", open: !c.env.ADMIN_TOKEN }));
  });
  for (const path of ["/status.json", "/metrics", "/status"]) app.all(path, (c) => methodNotAllowed(c, ["GET"]));
}
