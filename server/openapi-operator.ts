// The operator's endpoints in the OpenAPI document (server/openapi.ts): the status page's login
// form, and the admin API (docs/admin-api.md).
type Json = Record<string, unknown>;

const errorBody = (description: string): Json => ({ description, content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorBody" } } } });
const retryAfter = { "Retry-After": { description: "seconds until a retry may succeed", schema: { type: "integer", minimum: 0 } } };
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
              schema: { type: "object", properties: { token: { type: "string" }, next: { type: "string", enum: ["/status", "/status.json", "/metrics"] } }, required: ["token"] },
            },
          },
        },
        responses: {
          "303": { description: "logged in: the cookie is set; Location is the page asked for", headers: { "Set-Cookie": { schema: { type: "string" } }, Location: { schema: { type: "string" } } } },
          "401": html("the form again, saying the token was wrong"),
          "429": { ...errorBody("rate_limited: too many wrong tokens from this address"), headers: retryAfter },
        },
      },
    },
  };
}
