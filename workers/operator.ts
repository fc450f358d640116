// Who may see the operator's pages (/status, /status.json, /metrics) and call the admin API: a
// request with Authorization: Bearer <ADMIN_TOKEN>, or (the pages) a browser holding the login
// cookie the status page's form sets. Wrong credentials are throttled per client address, logged
// and counted (workers/http.ts authFailed).
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { FailureThrottle, newSession, SESSION_COOKIE, sessionValid } from "../server/operator-session";
import { ADMIN_LIMITS } from "../shared/limits";
import { tokenMatches } from "../server/stats";
import { httpError, type C } from "./http";

/** Wrong tokens per client address, across the login form, the pages and the admin API. */
export const operatorThrottle = new FailureThrottle();

/** 429 while the client address has presented too many wrong credentials. */
export function throttled(c: C): Response | null {
  const wait = operatorThrottle.blocked(c.var.client);
  if (wait === null) return null;
  c.header("Retry-After", String(wait));
  return httpError(c, 429, "rate_limited", `too many wrong credentials from this address; try again in ${wait} s`);
}

type Credential = "bearer" | "cookie" | "none" | "wrong";

/** What the request presents for the operator's pages, with ADMIN_TOKEN `token` set. */
export function pageCredential(c: C, token: string): Credential {
  const header = c.req.header("authorization");
  if (header !== undefined) return tokenMatches(header, token) ? "bearer" : "wrong";
  return sessionValid(getCookie(c, SESSION_COOKIE), token) ? "cookie" : "none";
}

/** Whether the relay is reached over https (directly, or per PUBLIC_URL behind a proxy): the cookie is then Secure. */
function overHttps(c: C): boolean {
  if (new URL(c.req.url).protocol === "https:") return true;
  return c.var.settings.publicUrls.some((u) => u.protocol === "https:" || u.protocol === "wss:");
}

/** Ends the login form's session: the cookie is cleared (the status page's Log out). */
export function clearSession(c: C): void {
  deleteCookie(c, SESSION_COOKIE, { path: "/", secure: overHttps(c) });
}

export function setSession(c: C, token: string): void {
  setCookie(c, SESSION_COOKIE, newSession(token), {
    path: "/",
    httpOnly: true,
    sameSite: "Strict",
    secure: overHttps(c),
    maxAge: ADMIN_LIMITS.session_seconds,
  });
}
