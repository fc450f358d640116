// The operator's lists as the Worker applies them, read from the RelayPolicy object through a
// cache of admin.policy_cache_ms per isolate, so a request does not call the object each time: a
// change reaches the isolate that made it at once and every other isolate within that delay.
import type { MiddlewareHandler } from "hono";
import { EMPTY_POLICY, policyOf, type Policy } from "../server/policy";
import { relayPolicy } from "../server/relay-objects";
import { ADMIN_LIMITS } from "../shared/limits";
import { log } from "../server/log";
import { httpError, isAdminRoute, type RelayHono } from "./http";

let cached: { policy: Policy; at: number } | undefined;

/** The lists in force (cached); the empty lists when the policy object cannot be reached. */
export async function currentPolicy(env: Env): Promise<Policy> {
  const now = Date.now();
  if (cached && now - cached.at < ADMIN_LIMITS.policy_cache_ms) return cached.policy;
  try {
    cached = { policy: policyOf(await relayPolicy(env).snapshot()), at: now };
  } catch (err) {
    log.error("policy: the lists could not be read; applying the last known", { err });
    return cached?.policy ?? EMPTY_POLICY;
  }
  return cached.policy;
}

/** Drops the cache (this isolate changed a list). */
export function forgetPolicy(): void {
  cached = undefined;
}

/** A blocked client address gets 403 on every route, but the admin API's (so the operator can unblock), decided by route. */
export const addressBlock: MiddlewareHandler<RelayHono> = async (c, next) => {
  if (!isAdminRoute(c.req.raw)) {
    const policy = await currentPolicy(c.env);
    if (policy.blockedIps.has(c.var.client)) return httpError(c, 403, "blocked", "this address is blocked by the relay's operator");
  }
  await next();
};

/** A blocked mailbox topic answers 403 on every route under it. */
export const topicBlock: MiddlewareHandler<RelayHono> = async (c, next) => {
  const topic = c.req.param("topic");
  if (topic !== undefined && (await currentPolicy(c.env)).blockedTopics.has(topic))
    return httpError(c, 403, "blocked", "this topic is blocked by the relay's operator");
  await next();
};
