// The operator's endpoints in the OpenAPI document (server/openapi.ts): the status page's login
// form, and the admin API (docs/admin-api.md).
import { error as errorBody, type Json, retryAfter } from "./openapi-parts";

const html = (description: string): Json => ({ description, content: { "text/html": { schema: { type: "string" } } } });

export function operatorPaths(): Record<string, Json> {
  return {
    "/status/login": {
      post: {
        operationId: "statusLogin",
        tags: ["operator"],
        summary: "The status page's login form: the admin token as a form field; right, a session cookie",
        description:
          "A browser asking for /status with ADMIN_TOKEN set gets a login form posting here. The right token sets an HttpOnly, " +
          "SameSite=Strict cookie (Secure over https) that opens /status, /status.json and /metrics for admin.session_seconds. " +
          "Wrong tokens count against the client address (admin.auth_failures_per_window).",
        requestBody: {
          required: true,
          content: {
            "application/x-www-form-urlencoded": {
              schema: {
                type: "object",
                properties: { token: { type: "string" }, next: { type: "string", enum: ["/status", "/status.json", "/metrics"] } },
                required: ["token"],
              },
            },
          },
        },
        responses: {
          "303": {
            description: "logged in: the cookie is set; Location is the page asked for",
            headers: { "Set-Cookie": { schema: { type: "string" } }, Location: { schema: { type: "string" } } },
          },
          "401": html("the form again, saying the token was wrong"),
          "429": { ...errorBody("rate_limited: too many wrong tokens from this address"), headers: retryAfter },
        },
      },
    },
    "/status/logout": {
      post: {
        operationId: "statusLogout",
        tags: ["operator"],
        summary: "The status page's Log out: the session cookie is cleared",
        description:
          "The button of a page seen through the login form's session. A POST, so that a link elsewhere cannot log the operator out.",
        responses: {
          "303": {
            description: "logged out: the cookie is cleared; Location is /status (the login form)",
            headers: { "Set-Cookie": { schema: { type: "string" } }, Location: { schema: { type: "string" } } },
          },
        },
      },
    },
  };
}

/** The admin API's one operation (NIP-86 JSON-RPC), at `/` and at the Tally endpoint. */
export function adminOperation(operationId: string): Json {
  const rpcAnswer = {
    type: "object",
    properties: { result: { description: "the method's result" }, error: { type: "string", description: "why the method failed" } },
    description: "exactly one of result and error",
  };
  return {
    operationId,
    tags: ["admin"],
    summary: "The admin API: NIP-86 relay management (docs/admin-api.md)",
    description:
      "Methods: supportedmethods, banpubkey, unbanpubkey, listbannedpubkeys, allowpubkey, unallowpubkey, listallowedpubkeys, " +
      "blockip, unblockip, listblockedips, edge.blocktopic, edge.unblocktopic, edge.listblockedtopics, edge.purgetopic, edge.liststorageholders, " +
      "edge.banaccount, edge.unbanaccount, edge.listbannedaccounts. " +
      "Authorized by Authorization: Bearer <ADMIN_TOKEN>, or Nostr <base64 of a NIP-98 event> (kind 27235; u = this URL; " +
      "method = POST; payload = SHA-256 hex of the body; within admin.nip98_max_skew_seconds) signed by a key in ADMIN_PUBKEYS.",
    security: [{ adminToken: [] }, { nip98: [] }],
    requestBody: {
      required: true,
      content: {
        "application/nostr+json+rpc": {
          schema: { type: "object", properties: { method: { type: "string" }, params: { type: "array" } }, required: ["method"] },
        },
      },
    },
    responses: {
      "200": { description: "the method's answer", content: { "application/json": { schema: rpcAnswer } } },
      "400": { description: "the body is not { method, params }", content: { "application/json": { schema: rpcAnswer } } },
      "401": {
        ...errorBody("auth_failed: neither the admin token nor a NIP-98 event by an admin key"),
        headers: { "WWW-Authenticate": { schema: { type: "string" } } },
      },
      "413": errorBody("too_large: the body is over admin.max_rpc_body_bytes"),
      "415": errorBody("bad_request: the Content-Type is not application/nostr+json+rpc"),
      "429": { ...errorBody("rate_limited: too many wrong credentials from this address"), headers: retryAfter },
    },
  };
}
