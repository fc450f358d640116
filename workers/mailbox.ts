// Routes of the Minca mailboxes (the mailbox protocol in docs/minca.md): CORS, input checks with
// shared/mailbox, and the call to the topic's Durable Object. No state and no protocol decisions here.
import { Hono } from "hono";
import { cors } from "hono/cors";
import { parseClientJson } from "../shared/client-json";
import { formatIssue } from "../shared/errors";
import { MAILBOX_LIMITS, WEBPUSH_LIMITS } from "../shared/limits";
import { pageQuerySchema, postQuerySchema, receiverIdSchema, resolveUntil } from "../shared/mailbox/messages";
import { endpointPolicyOf } from "../server/webpush/endpoint";
import { endpointRefusal } from "../server/webpush/receivers";
import { pushSubscriptionSchema, subscriptionBytes } from "../shared/webpush/subscription";
import { answer, clientLimited, httpError, methodNotAllowed, NO_STORE, readBody, topicCheck, type C, type RelayHono } from "./http";
import { readBounded } from "./body";
import { SHARED_CLIENT } from "./client-address";
import { admitClientOrigin } from "../durable-objects/push/push-gate";
import { topicBlock } from "./policy";
import { reserveShare, settleShare } from "./client-limits";
import { rowBytes } from "../shared/storage";
import { objectOf } from "../server/objects";
import { heldWait } from "../server/live";
import { STORAGE_LIMITS } from "../shared/limits";

export const MAILBOX_PATH = "/minca/v1/mailbox";

function mailbox(c: C) {
  return objectOf(c.env, "MINCA_MAILBOX", c.req.param("topic")!);
}

/** Mounted at MAILBOX_PATH/:topic; every route below names one topic, checked once by topicCheck. */
export const mailboxRoutes = new Hono<RelayHono>();

mailboxRoutes.use(
  "*",
  cors({
    origin: "*",
    allowMethods: ["GET", "POST", "DELETE", "OPTIONS"],
    allowHeaders: ["Content-Type"],
    exposeHeaders: ["Retry-After"],
    maxAge: 86_400,
  }),
);
mailboxRoutes.use("*", topicCheck);
mailboxRoutes.use("*", topicBlock);

mailboxRoutes.post("/", async (c) => {
  const q = postQuerySchema.safeParse(c.req.query());
  if (!q.success) return httpError(c, 400, "invalid_until", formatIssue(q.error));
  const until = resolveUntil(q.data.until, Math.floor(Date.now() / 1000));
  if ("error" in until) return httpError(c, 400, "invalid_until", until.error);
  const body = await readBounded(c.req.raw, MAILBOX_LIMITS.max_body_bytes);
  if (body === null) return httpError(c, 413, "too_large", `a mailbox item is at most ${MAILBOX_LIMITS.max_body_bytes} bytes`);
  // The client's share of the mailbox total (storage.client_share), charged for the row stored and,
  // for a topic's first row, its database (storage.database_bytes_mailbox): reserved for both,
  // what was not stored given back.
  const row = rowBytes(body.length);
  const reserved = row + STORAGE_LIMITS.database_bytes_mailbox;
  const over = reserveShare(c, "mailbox", reserved);
  if (over) return over;
  const posted = await mailbox(c).post(body, until.until, c.var.client);
  settleShare(c, "mailbox", reserved, posted.ok ? row + (posted.value.first ? STORAGE_LIMITS.database_bytes_mailbox : 0) : 0);
  return answer(c, posted, ({ seq, until }) => c.json({ seq, until }, 201));
});

mailboxRoutes.get("/", async (c) => {
  const q = pageQuerySchema.safeParse(c.req.query());
  if (!q.success) return httpError(c, 400, "invalid_query", formatIssue(q.error));
  return answer(c, await mailbox(c).page({ ...q.data, wait: heldWait(q.data.wait) }, c.var.client));
});

// One item's blob as it was posted: application/octet-stream, never content-coded.
mailboxRoutes.get("/items/:seq{[0-9]{1,15}}", async (c) => {
  const r = await mailbox(c).item(Number(c.req.param("seq")), c.var.client);
  return answer(c, r, (blob) =>
    blob === null
      ? httpError(c, 404, "not_found", "no such item (expired, evicted or never posted)")
      : c.body(blob as Uint8Array<ArrayBuffer>, 200, { "Content-Type": "application/octet-stream", ...NO_STORE }),
  );
});

mailboxRoutes.post("/receivers", async (c) => {
  const sub = await readBody(c, {
    max: MAILBOX_LIMITS.max_receiver_body_bytes,
    tooLarge: `a subscription is at most ${MAILBOX_LIMITS.max_receiver_body_bytes} bytes`,
    code: "invalid_subscription",
    parse: (text) => {
      const json = parseClientJson(text);
      if (!json.ok) return { ok: false, reason: `the body must be a PushSubscription's JSON: ${json.reason}` };
      const s = pushSubscriptionSchema.safeParse(json.value);
      return s.success ? { ok: true, value: s.data } : { ok: false, reason: formatIssue(s.error) };
    },
  });
  if (!sub.ok) return sub.answer;
  // Where the relay will send pushes (https, a public name, not itself): the push endpoint rule.
  // Asked here first so a refused endpoint costs nothing; the mailbox asks it again with the rest of
  // the receiver registry's rules (server/webpush/receivers.ts).
  const host = new URL(c.req.url).host;
  const bad = endpointRefusal(sub.value.endpoint, endpointPolicyOf(c.var.settings, host));
  if (bad) return httpError(c, 400, "invalid_endpoint", bad.detail);
  // The client's share of the mailbox total, charged for the receiver's row as the topic charges it
  // and, when it is the topic's first row, the topic's database (storage.database_bytes_mailbox):
  // reserved for both, what was not stored given back (as an item's POST).
  const row = rowBytes(subscriptionBytes(sub.value));
  const cost = row + STORAGE_LIMITS.database_bytes_mailbox;
  const over = reserveShare(c, "mailbox", cost);
  if (over) return over;
  // How many push origins one client may name (not for the shared client: that is everyone).
  const origins = c.var.client === SHARED_CLIENT ? { ok: true as const } : await admitClientOrigin(c.env, c.var.client, sub.value.endpoint);
  const { max_push_origins_per_client: max, push_origin_window_seconds: window } = WEBPUSH_LIMITS;
  const tooMany = clientLimited(
    c,
    () => (origins.ok ? 0 : origins.retryAfterSeconds * 1000),
    `a client registers receivers at ${max} push origins at most within ${window} s`,
  );
  if (tooMany) {
    settleShare(c, "mailbox", cost, 0);
    return tooMany;
  }
  const added = await mailbox(c).addReceiver(sub.value, c.var.client, host);
  settleShare(c, "mailbox", cost, added.ok ? row + (added.value.first ? STORAGE_LIMITS.database_bytes_mailbox : 0) : 0);
  return answer(c, added, ({ id }) => c.json({ id }, 201));
});

mailboxRoutes.delete("/receivers/:id", async (c) => {
  const id = c.req.param("id");
  if (!receiverIdSchema.safeParse(id).success) return httpError(c, 404, "not_found", "no such receiver");
  return answer(c, await mailbox(c).removeReceiver(id, c.var.client), () => c.body(null, 204));
});

mailboxRoutes.all("/", (c) => methodNotAllowed(c, ["GET", "POST"]));
mailboxRoutes.all("/items/:seq{[0-9]{1,15}}", (c) => methodNotAllowed(c, ["GET"]));
mailboxRoutes.all("/receivers", (c) => methodNotAllowed(c, ["POST"]));
mailboxRoutes.all("/receivers/:id", (c) => methodNotAllowed(c, ["DELETE"]));
