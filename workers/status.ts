// Routes of the operator's status page (docs/operating.md): GET /status (HTML), GET /status.json
// and GET /metrics (Prometheus text, server/metrics.ts), behind the ADMIN_TOKEN bearer token when
// one is configured. Counts come from the one RelayStats object; rendering is server/stats-page.ts.
import { Hono } from "hono";
import { relayStats } from "../server/relay-objects";
import { tokenMatches, type StatusAnswer } from "../shared/stats";
import { renderStatusPage } from "../server/stats-page";
import { METRICS_CONTENT_TYPE, renderMetrics } from "../server/metrics";
import { counterValues } from "../server/counters";
import { VERSION } from "../server/info";
import { authFailed, methodNotAllowed, type C, type RelayHono } from "./http";

/** Null when the request may see the page; else the 401 answer. */
function refused(c: C): Response | null {
  const token = c.var.settings.adminToken;
  if (!token) return null;
  const presented = c.req.header("authorization");
  if (tokenMatches(presented, token)) return null;
  return authFailed(c, 'Bearer realm="relay status"', "the status page and /metrics need Authorization: Bearer <ADMIN_TOKEN>", presented ? "wrong token" : "no token");
}

export const statusRoutes = new Hono<RelayHono>();

statusRoutes.get("/status.json", async (c) => {
  const no = refused(c);
  if (no) return no;
  c.header("Cache-Control", "no-store");
  return c.json({ open: !c.var.settings.adminToken, ...(await relayStats(c.env).snapshot()) } satisfies StatusAnswer);
});
statusRoutes.get("/metrics", async (c) => {
  const no = refused(c);
  if (no) return no;
  c.header("Cache-Control", "no-store");
  c.header("Content-Type", METRICS_CONTENT_TYPE);
  const build = { version: VERSION, runtime: c.var.settings.selfHosted ? "workerd" : "cloudflare" };
  return c.body(renderMetrics(await relayStats(c.env).snapshot(), counterValues(), build));
});
statusRoutes.get("/status", async (c) => {
  const no = refused(c);
  if (no) return no;
  c.header("Cache-Control", "no-store");
  const snapshot = await relayStats(c.env).snapshot();
  return c.html(renderStatusPage(snapshot, { name: c.var.settings.relayName, open: !c.var.settings.adminToken }));
});
for (const path of ["/status.json", "/metrics", "/status"]) statusRoutes.all(path, (c) => methodNotAllowed(c, ["GET"]));
