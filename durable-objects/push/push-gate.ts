// The relay-wide rate of pushes to one push-service origin (docs/mailbox.md): one object per
// origin, named by it, holding a token bucket in memory only (it stores nothing; an evicted gate
// forgets its bucket, which only forgives an origin that was idle). Every object that sends Web
// Push asks the gate of each origin before a batch, so no number of mailboxes or accounts can
// turn the relay into an amplifier toward one third party.
import { StoredObject } from "../base/stored-object";
import { WEBPUSH_LIMITS } from "../../shared/limits";
import { log } from "../../shared/log";
import { TokenBucket } from "../../shared/rate-limit";
import { endpointOrigin } from "../../shared/webpush/endpoint";

export class PushGate extends StoredObject<Env> {
  private bucket: TokenBucket | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, { migrations: [] });
  }

  /** Grants up to `n` pushes to this origin now; for the rest, the milliseconds until the next token. */
  take(n: number): { granted: number; retryAfterMs: number } {
    this.bucket ??= new TokenBucket(WEBPUSH_LIMITS.origin_push_burst, WEBPUSH_LIMITS.origin_pushes_per_second);
    const now = Date.now();
    let granted = 0;
    while (granted < n && this.bucket.take(now)) granted++;
    return { granted, retryAfterMs: granted < n ? Math.max(1_000, this.bucket.retryAfterMs()) : 0 };
  }
}

/**
 * Splits pushes about to be sent into those the origins' gates admit now and those that wait
 * (with the time to try again). Waiting is not a try: it costs no attempt. A gate that cannot be
 * asked holds its origin's pushes back for `fallbackMs`.
 */
export async function admitPushes<T>(
  env: Env,
  items: T[],
  endpointOf: (item: T) => string,
  fallbackMs: number,
): Promise<{ go: T[]; wait: Array<{ item: T; at: number }> }> {
  const byOrigin = new Map<string, T[]>();
  for (const item of items) {
    const o = endpointOrigin(endpointOf(item));
    byOrigin.set(o, [...(byOrigin.get(o) ?? []), item]);
  }
  const go: T[] = [];
  const wait: Array<{ item: T; at: number }> = [];
  await Promise.all(
    [...byOrigin].map(async ([origin, list]) => {
      let granted = 0;
      let retryAfterMs = fallbackMs;
      try {
        const r = await env.PUSH_GATE.get(env.PUSH_GATE.idFromName(origin)).take(list.length);
        granted = r.granted;
        retryAfterMs = r.retryAfterMs;
      } catch (err) {
        log.error("push gate: could not be asked; the pushes wait", { origin, err });
      }
      go.push(...list.slice(0, granted));
      const at = Date.now() + retryAfterMs;
      for (const item of list.slice(granted)) wait.push({ item, at });
      if (granted < list.length) log.warn("push gate: over the per-origin rate; pushes wait", { origin, waiting: list.length - granted });
    }),
  );
  return { go, wait };
}
