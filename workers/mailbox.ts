// Routes of the Minca mailboxes (DESIGN section 7): CORS, input checks with shared/mailbox, and
// the call to the topic's Durable Object. No state and no protocol decisions here.
import type { Context, Hono } from "hono";
import { cors } from "hono/cors";
import type { MailboxResult } from "../durable-objects/mailbox/minca-mailbox";
import { parseClientJson } from "../shared/client-json";
import { utf8Decode } from "../shared/encoding";
import { MAILBOX_LIMITS } from "../shared/limits";
import { pageQuerySchema, postQuerySchema, receiverIdSchema, resolveUntil } from "../shared/mailbox/messages";
import { isTopic } from "../shared/mailbox/topic";
import { checkPushEndpoint, endpointPolicy } from "../shared/webpush/endpoint";
import { pushSubscriptionSchema } from "../shared/webpush/subscription";
import { httpError, methodNotAllowed } from "./app";
import { clientAddress } from "./client-address";
import { readBounded } from "./body";

type C = Context<{ Bindings: Env }>;

export const MAILBOX_PATH = "/minca/v1/mailbox";

/** Who a rate limit counts against (DESIGN section 3: the client address, from where it can be trusted). */
function clientOf(c: C): string {
  return clientAddress(c.req.raw.headers, c.env);
}

function mailbox(c: C, topic: string) {
  return c.env.MINCA_MAILBOX.get(c.env.MINCA_MAILBOX.idFromName(topic));
}

function failed(c: C, r: Extract<MailboxResult<unknown>, { ok: false }>): Response {
  if (r.retryAfterSeconds !== undefined) c.header("Retry-After", String(r.retryAfterSeconds));
  return httpError(c, r.status, r.code, r.message);
}

export function firstIssue(e: { issues: Array<{ message: string; path: PropertyKey[] }> }): string {
  const i = e.issues[0];
  return i ? `${i.path.length ? `${i.path.map(String).join(".")}: ` : ""}${i.message}` : "invalid";
}

const noStore = { "Cache-Control": "no-store" };

export function mountMailbox(app: Hono<{ Bindings: Env }>): void {
  app.use(
    `${MAILBOX_PATH}/*`,
    cors({
      origin: "*",
      allowMethods: ["GET", "POST", "DELETE", "OPTIONS"],
      allowHeaders: ["Content-Type"],
      exposeHeaders: ["Retry-After"],
      maxAge: 86_400,
    }),
  );

  app.use(`${MAILBOX_PATH}/:topic/*`, async (c, next) => {
    if (!isTopic(c.req.param("topic"))) return httpError(c, 400, "invalid_topic", "topic must be 16-128 characters of [A-Za-z0-9_-]");
    await next();
  });
  app.use(`${MAILBOX_PATH}/:topic`, async (c, next) => {
    if (!isTopic(c.req.param("topic"))) return httpError(c, 400, "invalid_topic", "topic must be 16-128 characters of [A-Za-z0-9_-]");
    await next();
  });

  app.post(`${MAILBOX_PATH}/:topic`, async (c) => {
    const topic = c.req.param("topic");
    const q = postQuerySchema.safeParse(c.req.query());
    if (!q.success) return httpError(c, 400, "invalid_until", firstIssue(q.error));
    const until = resolveUntil(q.data.until, Math.floor(Date.now() / 1000));
    if ("error" in until) return httpError(c, 400, "invalid_until", until.error);
    const body = await readBounded(c.req.raw, MAILBOX_LIMITS.max_body_bytes);
    if (body === null) return httpError(c, 413, "too_large", `a mailbox item is at most ${MAILBOX_LIMITS.max_body_bytes} bytes`);
    const r = await mailbox(c, topic).post(body, until.until, clientOf(c));
    if (!r.ok) return failed(c, r);
    return c.json(r.value, 201);
  });

  app.get(`${MAILBOX_PATH}/:topic`, async (c) => {
    const topic = c.req.param("topic");
    const q = pageQuerySchema.safeParse(c.req.query());
    if (!q.success) return httpError(c, 400, "invalid_query", firstIssue(q.error));
    const r = await mailbox(c, topic).page(q.data, clientOf(c));
    if (!r.ok) return failed(c, r);
    return c.json(r.value, 200, noStore);
  });

  // One item's blob as it was posted: application/octet-stream, never content-coded.
  app.get(`${MAILBOX_PATH}/:topic/items/:seq{[0-9]{1,15}}`, async (c) => {
    const topic = c.req.param("topic");
    const r = await mailbox(c, topic).item(Number(c.req.param("seq")), clientOf(c));
    if (!r.ok) return failed(c, r);
    if (r.value === null) return httpError(c, 404, "not_found", "no such item (expired, evicted or never posted)");
    return c.body(r.value as Uint8Array<ArrayBuffer>, 200, { "Content-Type": "application/octet-stream", ...noStore });
  });

  app.post(`${MAILBOX_PATH}/:topic/receivers`, async (c) => {
    const topic = c.req.param("topic");
    const body = await readBounded(c.req.raw, MAILBOX_LIMITS.max_receiver_body_bytes);
    if (body === null) return httpError(c, 413, "too_large", `a subscription is at most ${MAILBOX_LIMITS.max_receiver_body_bytes} bytes`);
    let text: string;
    try {
      text = utf8Decode(body);
    } catch {
      return httpError(c, 400, "invalid_subscription", "the body is not UTF-8");
    }
    const json = parseClientJson(text);
    if (!json.ok) return httpError(c, 400, "invalid_subscription", `the body must be a PushSubscription's JSON: ${json.reason}`);
    const sub = pushSubscriptionSchema.safeParse(json.value);
    if (!sub.success) return httpError(c, 400, "invalid_subscription", firstIssue(sub.error));
    // DESIGN section 7: where the relay will send pushes (https, a public name, not itself).
    const rule = checkPushEndpoint(sub.data.endpoint, endpointPolicy(c.env, new URL(c.req.url).host));
    if (!rule.ok) return httpError(c, 400, "invalid_endpoint", rule.reason);
    const r = await mailbox(c, topic).addReceiver(sub.data, clientOf(c));
    if (!r.ok) return failed(c, r);
    return c.json(r.value, 201);
  });

  app.delete(`${MAILBOX_PATH}/:topic/receivers/:id`, async (c) => {
    const topic = c.req.param("topic");
    const id = c.req.param("id");
    if (!receiverIdSchema.safeParse(id).success) return httpError(c, 404, "not_found", "no such receiver");
    const r = await mailbox(c, topic).removeReceiver(id, clientOf(c));
    if (!r.ok) return failed(c, r);
    return c.body(null, 204);
  });

  app.all(`${MAILBOX_PATH}/:topic`, (c) => methodNotAllowed(c, ["GET", "POST"]));
  app.all(`${MAILBOX_PATH}/:topic/items/:seq{[0-9]{1,15}}`, (c) => methodNotAllowed(c, ["GET"]));
  app.all(`${MAILBOX_PATH}/:topic/receivers`, (c) => methodNotAllowed(c, ["POST"]));
  app.all(`${MAILBOX_PATH}/:topic/receivers/:id`, (c) => methodNotAllowed(c, ["DELETE"]));
}
