// The status page's login session: after the operator types ADMIN_TOKEN into the login form, the
// relay sets a cookie holding an expiry and an HMAC of it keyed by the token. Nothing is stored on
// the relay; changing ADMIN_TOKEN ends every session. The token itself never travels in a cookie.
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8Encode } from "../shared/encoding";
import { ADMIN_LIMITS } from "../shared/limits";

export const SESSION_COOKIE = "relay_status";

function mac(token: string, expires: number): string {
  return bytesToHex(hmac(sha256, utf8Encode(token), utf8Encode(`edge-relay status session\u0000${expires}`)));
}

/** A session value valid until now + admin.session_seconds. */
export function newSession(token: string, nowMs = Date.now()): string {
  const expires = Math.floor(nowMs / 1000) + ADMIN_LIMITS.session_seconds;
  return `${expires}.${mac(token, expires)}`;
}

/** Whether `value` is a session this token made that has not expired. */
export function sessionValid(value: string | undefined, token: string, nowMs = Date.now()): boolean {
  const m = /^(\d{1,12})\.([0-9a-f]{64})$/.exec(value ?? "");
  if (!m) return false;
  const expires = Number(m[1]);
  if (expires * 1000 <= nowMs) return false;
  return sameText(m[2], mac(token, expires));
}

/** Compares two strings in time that depends on their lengths only. */
function sameText(a: string, b: string): boolean {
  const x = utf8Encode(a);
  const y = utf8Encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

/**
 * Wrong credentials per client address (admin.auth_failures_per_window per window): past them,
 * every try from that address is refused until the window ends, the right token included. Held in
 * the isolate's memory (on Cloudflare, per isolate), at most `maxClients` addresses
 * (admin.auth_failure_clients; the least recently failed is forgotten first).
 */
export class FailureThrottle {
  private readonly failures = new Map<string, { n: number; since: number }>();

  constructor(private readonly maxClients: number = ADMIN_LIMITS.auth_failure_clients) {}

  /** Seconds until `client` may try again, or null when it may now. */
  blocked(client: string, nowMs = Date.now()): number | null {
    const f = this.failures.get(client);
    if (!f) return null;
    const ends = f.since + ADMIN_LIMITS.auth_failure_window_seconds * 1000;
    if (nowMs >= ends) {
      this.failures.delete(client);
      return null;
    }
    return f.n >= ADMIN_LIMITS.auth_failures_per_window ? Math.max(1, Math.ceil((ends - nowMs) / 1000)) : null;
  }

  fail(client: string, nowMs = Date.now()): void {
    this.blocked(client, nowMs); // forgets an ended window
    const f = this.failures.get(client) ?? { n: 0, since: nowMs };
    f.n++;
    // Most recently failed last; past maxClients the least recently failed is forgotten, never all at once.
    this.failures.delete(client);
    if (this.failures.size >= this.maxClients) this.failures.delete(this.failures.keys().next().value as string);
    this.failures.set(client, f);
  }
}
