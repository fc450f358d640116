// The relay-wide rates of Web Push (docs/mailbox.md): one object per push origin (a registrable
// domain, so every subdomain of one domain shares it) and one for the whole relay, each named by
// what it gates and holding a token bucket in memory only (it stores nothing; an evicted gate
// forgets its bucket, which only forgives a gate that was idle). Every object that sends Web Push
// asks the gates before a batch (server/webpush/admit.ts), so no number of mailboxes, accounts or
// subdomains can turn the relay into an amplifier toward one third party, nor toward all of them.
import { StoredObject } from "../base/stored-object";
import { log } from "../../server/log";
import { objectOf } from "../../server/objects";
import { WEBPUSH_LIMITS } from "../../shared/limits";
import { pushDomain } from "../../server/webpush/endpoint";
import { type Rate, TokenBucket } from "../../shared/rate-limit";
import { type Admission, admitThroughGates } from "../../server/webpush/admit";

export class PushGate extends StoredObject<Env> {
  private bucket: TokenBucket | undefined;
  /** A client's gate: the push origins it registered receivers at, with when each stops counting. */
  private origins: Map<string, number> | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, { migrations: [] });
  }

  /** Grants up to `n` pushes now at `rate`; for the rest, the milliseconds until the next token. */
  take(n: number, rate: Rate): { granted: number; retryAfterMs: number } {
    this.bucket ??= new TokenBucket(rate.burst, rate.perSecond);
    const now = Date.now();
    let granted = 0;
    while (granted < n && this.bucket.take(now)) granted++;
    return { granted, retryAfterMs: granted < n ? Math.max(1_000, this.bucket.retryAfterMs()) : 0 };
  }

  /**
   * A client's gate: notes that it registers a receiver at push origin `origin`, unless it already
   * has `max` other origins counting (each counts for `windowMs` after it was last registered at);
   * then says how long until one stops counting.
   */
  noteOrigin(origin: string, max: number, windowMs: number): { ok: boolean; retryAfterMs: number } {
    const now = Date.now();
    this.origins ??= new Map();
    for (const [o, until] of this.origins) if (until <= now) this.origins.delete(o);
    if (!this.origins.has(origin) && this.origins.size >= max) {
      return { ok: false, retryAfterMs: Math.max(1_000, Math.min(...this.origins.values()) - now) };
    }
    this.origins.set(origin, now + windowMs);
    return { ok: true, retryAfterMs: 0 };
  }
}

/**
 * Whether `client` may register a receiver at `endpoint` (docs/hostile.md, "Web Push"): at most
 * max_push_origins_per_client push origins per client within push_origin_window_seconds. The
 * caller does not ask it for the shared client (no trusted client address: everyone is one
 * client, and one attacker could lock every user out of new origins). A gate that cannot be asked
 * lets the receiver in: the per-topic bound and the relay's gates still hold.
 */
export async function admitClientOrigin(
  env: Env,
  client: string,
  endpoint: string,
): Promise<{ ok: true } | { ok: false; retryAfterSeconds: number }> {
  try {
    const gate = objectOf(env, "PUSH_GATE", `client:${client}`);
    const r = await gate.noteOrigin(
      pushDomain(endpoint),
      WEBPUSH_LIMITS.max_push_origins_per_client,
      WEBPUSH_LIMITS.push_origin_window_seconds * 1000,
    );
    return r.ok ? { ok: true } : { ok: false, retryAfterSeconds: Math.ceil(r.retryAfterMs / 1000) };
  } catch (err) {
    log.error("push gate: a client's gate could not be asked; the receiver is let in", { err });
    return { ok: true };
  }
}

/**
 * Splits pushes about to be sent into those the gates admit now and those that wait (with the
 * time to try again). Waiting is not a try: it costs no attempt. A gate that cannot be asked holds
 * its pushes back for `fallbackMs`.
 */
export async function admitPushes<T>(env: Env, items: T[], endpointOf: (item: T) => string, fallbackMs: number): Promise<Admission<T>> {
  const out = await admitThroughGates(
    async (name, n, rate) => {
      try {
        return await objectOf(env, "PUSH_GATE", name).take(n, rate);
      } catch (err) {
        log.error("push gate: could not be asked; the pushes wait", { gate: name, err });
        throw err;
      }
    },
    items,
    endpointOf,
    fallbackMs,
  );
  for (const h of out.held) {
    log.warn(`push gate: over the ${h.gate === "origin" ? "per-origin" : "relay-wide"} rate; pushes wait`, {
      origin: h.origin,
      waiting: h.waiting,
    });
  }
  return out;
}
