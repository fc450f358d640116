// The one way errors travel: over HTTP as {"error":{"code","message"}}, over WebSockets as
// {"type":"error","code","message","id"?}. Codes are snake_case and listed here, once.
import * as z from "zod";

export const ERROR_CODES = [
  // common (docs/hostile.md)
  "invalid_message",
  "unknown_type",
  "auth_failed",
  "rate_limited",
  "too_large",
  "internal_error",
  "not_found",
  "method_not_allowed",
  "upgrade_required",
  "bad_request",
  "unavailable",
  /** A relay-wide storage total (limits.storage) is reached: nothing more of that kind is stored until some is freed. */
  "storage_full",
  /** A setting of the relay is invalid: every request is refused until the operator fixes it. */
  "bad_setting",
  /** The operator banned this key or account, or blocked this client address or topic (the admin API). */
  "banned",
  "blocked",
  /** Allowlist mode: the operator allows only listed keys, and this one is not. */
  "not_allowed",
  // tally
  "forbidden_sender",
  "envelope_too_large",
  "signal_too_large",
  "peer_unavailable",
  "too_many_devices",
  "already_registered",
  // passnote sync rooms and minca code-channel rooms
  "room_full",
  "room_expired",
  "did_in_room",
  "already_joined",
  "too_many_messages",
  // minca mailboxes
  "invalid_topic",
  "invalid_until",
  "invalid_query",
  "invalid_subscription",
  "too_many_receivers",
  "invalid_endpoint",
  "receiver_exists",
  // minca hosting (docs/hosting.md)
  "invalid_grant",
  "invalid_versions",
  "carry_closed",
  "carry_space_conflict",
  "quota_exceeded",
  "read_proof_required",
  "read_proof_invalid",
  "admission_required",
  "not_admitted",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface SocketError {
  type: "error";
  code: ErrorCode;
  message: string;
  id?: string;
  /** rate_limited only: milliseconds until the socket's rate allows one more message (docs/passnote.md). */
  retry_after_ms?: number;
}

export function socketError(code: ErrorCode, message: string, id?: string): SocketError {
  return id === undefined ? { type: "error", code, message } : { type: "error", code, message, id };
}

/** The answer to a message refused by the rate limit: never dropped silently (docs/passnote.md). */
export function rateLimitedError(message: string, retryAfterMs: number): SocketError {
  return { type: "error", code: "rate_limited", message, retry_after_ms: Math.max(1, Math.ceil(retryAfterMs)) };
}

/**
 * The `error` frame as every protocol's client reads it (one schema for Tally, Passnote rooms,
 * Minca rooms and the SDKs). Read leniently: `code` is any string, since a newer relay may send a
 * code this client does not know yet; the relay itself only sends ERROR_CODES.
 */
export const errorFrameSchema = z.object({
  type: z.literal("error"),
  code: z.string(),
  message: z.string(),
  id: z.string().optional(),
  /** rate_limited: milliseconds to wait before the next message is accepted. */
  retry_after_ms: z.number().int().nonnegative().optional(),
});

/**
 * The one way a failed zod parse becomes a message for people: the first issue, with where it is.
 * `prefix` names the object the path is inside (`envelope` gives `at envelope.ciphertext`).
 */
export function formatIssue(
  error: { issues: ReadonlyArray<{ message: string; path: ReadonlyArray<PropertyKey> }> },
  prefix?: string,
): string {
  const issue = error.issues[0];
  if (!issue) return "invalid";
  const path = issue.path.map(String).join(".");
  const where = path ? ` at ${prefix ? `${prefix}.` : ""}${path}` : "";
  return `${issue.message}${where}`;
}

/** Every HTTP error answer's body (the OpenAPI document's ErrorBody, server/openapi.ts). */
export const httpErrorBodySchema = z.object({
  error: z.object({
    code: z.enum(ERROR_CODES).describe("snake_case; a client meets codes newer than its own list and treats them as failures"),
    message: z.string().describe("for people: what was wrong, never a secret"),
    retry_after_ms: z
      .number()
      .int()
      .optional()
      .describe("rate_limited by a per-client limit of the Worker: milliseconds until the request may succeed (as Retry-After, finer)"),
  }),
});
type HttpErrorBody = z.infer<typeof httpErrorBodySchema>;

export function httpErrorBody(code: ErrorCode, message: string): HttpErrorBody {
  return { error: { code, message } };
}
