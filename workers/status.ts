// Routes of the operator's status page (docs/operating.md): GET /status (HTML), GET /status.json
// and GET /metrics (Prometheus text, server/metrics.ts), behind ADMIN_TOKEN. Without one they are
// open only on a self-hosted relay that listens on loopback only, and closed (401) everywhere else.
// Programs send Authorization: Bearer <ADMIN_TOKEN>; a browser asking for HTML gets a login form
// instead of a 401 JSON body, and once the token is typed in (POST /status/login) a session cookie
// (HttpOnly, SameSite=Strict, Secure over https) lets it see the pages. Counts come from the one
// RelayStats object; rendering is server/stats-page.ts.
import { Hono } from "hono";
import { relayStats } from "../server/relay-objects";
import type { StatusAnswer } from "../server/stats";
import { renderStatusPage, STATUS_LOGOUT_PATH } from "../server/stats-page";
import { METRICS_CONTENT_TYPE, renderMetrics } from "../server/metrics";
import { counterValues } from "../server/counters";
import { COMMIT, VERSION } from "../server/info";
import { tokenMatches } from "../server/stats";
import { authFailed, escapeHtml, methodNotAllowed, type C, type RelayHono } from "./http";
import { clearSession, operatorThrottle, pageCredential, setSession, throttled } from "./operator";

const STATUS_LOGIN_PATH = "/status/login";

function wantsHtml(c: C): boolean {
  return (c.req.header("accept") ?? "").includes("text/html");
}

/** Whether the pages are open without a token: no ADMIN_TOKEN, on a relay that listens on loopback only. */
function openWithoutToken(c: C): boolean {
  return !c.var.settings.adminToken && c.var.settings.loopbackOnly;
}

/** Null when the request may see the page; else the answer (401, the login form, or 429). */
function refused(c: C): Response | null {
  if (openWithoutToken(c)) return null;
  const token = c.var.settings.adminToken;
  // A valid token or session is checked before the throttle: wrong tries from anyone (in shared
  // mode, everyone is one client) never lock the operator out.
  const cred = token ? pageCredential(c, token) : "none";
  if (cred === "bearer" || cred === "cookie") return null;
  const slow = throttled(c);
  if (slow) return slow;
  if (!token) {
    // Closed: no token opens them. A credential sent anyway is a wrong one, throttled like any.
    if (c.req.header("authorization") !== undefined) operatorThrottle.fail(c.var.client);
    return authFailed(
      c,
      'Bearer realm="relay status"',
      "the status page and /metrics are closed: this relay has no ADMIN_TOKEN and listens beyond loopback; its operator sets ADMIN_TOKEN to read them",
      "no ADMIN_TOKEN is set",
    );
  }
  if (cred === "wrong") operatorThrottle.fail(c.var.client);
  if (wantsHtml(c) && cred !== "wrong") {
    c.header("WWW-Authenticate", 'Bearer realm="relay status"');
    return c.html(loginPage(c.var.settings.relayName, c.req.path, ""), 401);
  }
  return authFailed(
    c,
    'Bearer realm="relay status"',
    "the status page and /metrics need Authorization: Bearer <ADMIN_TOKEN>",
    cred === "wrong" ? "wrong token" : "no token",
  );
}

export const statusRoutes = new Hono<RelayHono>();

statusRoutes.get("/status.json", async (c) => {
  const no = refused(c);
  if (no) return no;
  c.header("Cache-Control", "no-store");
  return c.json({ open: openWithoutToken(c), ...(await relayStats(c.env).snapshot()) } satisfies StatusAnswer);
});
statusRoutes.get("/metrics", async (c) => {
  const no = refused(c);
  if (no) return no;
  c.header("Cache-Control", "no-store");
  c.header("Content-Type", METRICS_CONTENT_TYPE);
  const build = { version: VERSION, commit: COMMIT, runtime: c.var.settings.selfHosted ? "workerd" : "cloudflare" };
  return c.body(renderMetrics(await relayStats(c.env).snapshot(), counterValues(), build));
});
statusRoutes.get("/status", async (c) => {
  const no = refused(c);
  if (no) return no;
  c.header("Cache-Control", "no-store");
  const snapshot = await relayStats(c.env).snapshot();
  const token = c.var.settings.adminToken;
  return c.html(
    renderStatusPage(snapshot, {
      name: c.var.settings.relayName,
      open: openWithoutToken(c),
      selfHosted: c.var.settings.selfHosted,
      loggedIn: !!token && pageCredential(c, token) === "cookie",
    }),
  );
});

// Log out: the session cookie goes, and the browser is sent back to the login form. A POST (the
// page's button), so that a link elsewhere cannot log the operator out.
statusRoutes.post(STATUS_LOGOUT_PATH, (c) => {
  clearSession(c);
  c.header("Cache-Control", "no-store");
  return c.redirect("/status", 303);
});

// The login form's target: the token as a form field; right, a session cookie and back to /status.
statusRoutes.post(STATUS_LOGIN_PATH, async (c) => {
  const token = c.var.settings.adminToken;
  if (!token) return c.redirect("/status", 303);
  const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
  const typed = typeof form.token === "string" ? form.token : "";
  // The right token is let in before the throttle (which only ever holds back wrong ones).
  const right = tokenMatches(`Bearer ${typed}`, token);
  const slow = right ? null : throttled(c);
  if (slow) return slow;
  if (!right) {
    operatorThrottle.fail(c.var.client);
    authFailed(c, 'Bearer realm="relay status"', "wrong token", typed ? "wrong token" : "no token");
    return c.html(loginPage(c.var.settings.relayName, "/status", "That is not this relay's admin token."), 401);
  }
  setSession(c, token);
  c.header("Cache-Control", "no-store");
  return c.redirect(safeNext(form.next), 303);
});

/** Where the form sends the browser back to: one of the operator's pages, nothing else. */
function safeNext(next: unknown): string {
  return next === "/status.json" || next === "/metrics" ? next : "/status";
}

function loginPage(name: string, next: string, error: string): string {
  return (
    `<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
    `<title>${escapeHtml(name)}: log in</title>` +
    `<style>body{font:16px system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}input{font:inherit;padding:.4rem;width:100%;box-sizing:border-box}button{font:inherit;margin-top:.8rem;padding:.4rem 1rem}.error{color:#b00}</style>` +
    `<h1>${escapeHtml(name)}</h1><p>The status page needs the relay's admin token (the <code>ADMIN_TOKEN</code> setting).</p>` +
    (error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : "") +
    `<form method="post" action="${STATUS_LOGIN_PATH}"><label>Admin token <input type="password" name="token" autocomplete="current-password" required autofocus></label>` +
    `<input type="hidden" name="next" value="${escapeHtml(next)}"><button type="submit">Log in</button></form>`
  );
}

for (const path of ["/status.json", "/metrics", "/status"]) statusRoutes.all(path, (c) => methodNotAllowed(c, ["GET"]));
statusRoutes.all(STATUS_LOGIN_PATH, (c) => methodNotAllowed(c, ["POST"]));
statusRoutes.all(STATUS_LOGOUT_PATH, (c) => methodNotAllowed(c, ["POST"]));
