// Sending one push message (RFC 8030 §5) and reading the push service's answer. Pure: the
// caller injects `fetch`, so the same sender runs in a Durable Object, in Node and in tests.
import * as z from "zod";
import { WEBPUSH_LIMITS } from "../../shared/limits";
import { encryptPushMessage } from "../../shared/webpush/encrypt";
import { subscriptionKeys } from "../../shared/webpush/subscription";
import { VapidSigner, type VapidKeys } from "./vapid";
import { parseRetryAfter } from "../../shared/retry-after";

export { parseRetryAfter };

export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

const URGENCIES = ["very-low", "low", "normal", "high"] as const;
type Urgency = (typeof URGENCIES)[number];

/** RFC 8030 §5.4 Topic: base64url, at most 32 characters, a length that decodes (not 4k+1). */
export const pushTopicSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]+$/, "Topic must be base64url")
  .max(WEBPUSH_LIMITS.topic_max_chars)
  .refine((s) => s.length % 4 !== 1, "Topic length does not decode");

export interface PushTarget {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

export interface PushOptions {
  /** Seconds the push service may keep the message (0: deliver now or drop). */
  ttl: number;
  urgency?: Urgency;
  /** Replaces an undelivered message with the same Topic. */
  topic?: string;
}

/**
 * What to do after one attempt:
 * - delivered: 2xx (201 Created);
 * - gone: 404/410, the subscription no longer exists: forget the receiver;
 * - too_large: 413, the same message will never fit: do not retry;
 * - retry: 429, 5xx or no answer: try again after `retryAfterSeconds` when the service said so;
 * - rejected: 400/401/403 and other 4xx, a configuration error (bad VAPID, bad headers): log, do not retry.
 */
export type PushOutcome =
  | { kind: "delivered"; status: number }
  | { kind: "gone"; status: number }
  | { kind: "too_large"; status: number }
  | { kind: "retry"; status: number; retryAfterSeconds?: number; error?: string }
  | { kind: "rejected"; status: number; detail: string };

/**
 * A push service's answer text as the relay may log it: control characters (line breaks, escape
 * sequences) removed, at most WEBPUSH_LIMITS.max_logged_answer_chars characters.
 */
export function answerForLog(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: C0/C1 control characters are exactly what a logged answer must not carry
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, " ").trim();
  const max = WEBPUSH_LIMITS.max_logged_answer_chars;
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}

/**
 * Reads at most `max` bytes of a body and cancels the rest (an endless answer costs no more than
 * that); a body that fails or times out midway gives what was read.
 */
export async function readAtMost(
  body: ReadableStream<Uint8Array> | null,
  max: number = WEBPUSH_LIMITS.max_answer_bytes,
): Promise<Uint8Array> {
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  const out = new Uint8Array(max);
  let n = 0;
  try {
    while (n < max) {
      const { done, value } = await reader.read();
      if (done) break;
      const take = Math.min(value.byteLength, max - n);
      out.set(value.subarray(0, take), n);
      n += take;
    }
  } catch {
    // a reset or the timeout: keep what arrived
  } finally {
    reader.cancel().catch(() => {});
  }
  return out.slice(0, n);
}

/**
 * What one answer means. Only a 4xx that says nothing of the subscription is read (at most
 * max_answer_bytes, for the log); every other body is cancelled unread. A redirect is never
 * followed (a push service does not redirect; a URL that does is not one): rejected.
 */
export async function classifyPushAnswer(res: Response, nowMs: number): Promise<PushOutcome> {
  const status = res.status;
  const discard = () => res.body?.cancel().catch(() => {});
  if (status >= 200 && status < 300) {
    discard();
    return { kind: "delivered", status };
  }
  if (status === 404 || status === 410) {
    discard();
    return { kind: "gone", status };
  }
  if (status === 413) {
    discard();
    return { kind: "too_large", status };
  }
  if (status === 429 || status >= 500) {
    discard();
    return { kind: "retry", status, retryAfterSeconds: parseRetryAfter(res.headers.get("retry-after"), nowMs) };
  }
  if (status >= 300 && status < 400) {
    discard();
    return { kind: "rejected", status, detail: "a redirect (not followed)" };
  }
  const text = new TextDecoder().decode(await readAtMost(res.body));
  return { kind: "rejected", status, detail: answerForLog(text) };
}

export interface RetryPolicy {
  /** First delay, seconds; doubles with each try. */
  baseSeconds: number;
  /** Longest backoff, seconds. */
  maxSeconds: number;
  /** Longest Retry-After honoured, seconds. */
  retryAfterMaxSeconds: number;
}

/**
 * Delay before try `attempt + 1` (attempt counts from 1): backoff doubling from the base up to its
 * cap, but never sooner than the push service's Retry-After (itself bounded).
 */
export function retryDelaySeconds(attempt: number, retryAfterSeconds: number | undefined, p: RetryPolicy): number {
  const backoff = Math.min(p.maxSeconds, p.baseSeconds * 2 ** Math.min(30, Math.max(0, attempt - 1)));
  return Math.max(backoff, Math.min(retryAfterSeconds ?? 0, p.retryAfterMaxSeconds));
}

interface WebPushSenderOptions {
  keys: VapidKeys;
  /** VAPID `sub`: mailto: or https: URL. */
  subject: string;
  fetch: FetchLike;
  now?: () => number;
  /** Milliseconds one push may take; WEBPUSH_LIMITS.send_timeout_seconds when absent. */
  timeoutMs?: number;
}

/** One application server: encrypts, signs (VAPID, cached per origin) and posts push messages. */
export class WebPushSender {
  private readonly signer: VapidSigner;
  private readonly fetchFn: FetchLike;
  private readonly now: () => number;
  private readonly timeoutMs: number;

  constructor(opts: WebPushSenderOptions) {
    this.now = opts.now ?? Date.now;
    this.timeoutMs = opts.timeoutMs ?? WEBPUSH_LIMITS.send_timeout_seconds * 1000;
    this.signer = new VapidSigner(opts.keys, opts.subject, this.now);
    this.fetchFn = opts.fetch;
  }

  get publicKey(): Uint8Array {
    return this.signer.publicKey;
  }

  /** The request for one push message (exposed for inspection; send() posts it). */
  buildRequest(target: PushTarget, payload: Uint8Array, opts: PushOptions): { url: string; init: RequestInit } {
    if (!Number.isInteger(opts.ttl) || opts.ttl < 0) throw new RangeError("TTL must be a non-negative integer");
    const headers: Record<string, string> = {
      TTL: String(Math.min(opts.ttl, WEBPUSH_LIMITS.max_ttl_seconds)),
      Authorization: this.signer.authorization(target.endpoint),
    };
    if (opts.urgency !== undefined) {
      if (!URGENCIES.includes(opts.urgency)) throw new RangeError("unknown Urgency");
      headers.Urgency = opts.urgency;
    }
    if (opts.topic !== undefined) {
      if (!pushTopicSchema.safeParse(opts.topic).success) throw new RangeError("Topic must be at most 32 base64url characters");
      headers.Topic = opts.topic;
    }
    let body: Uint8Array | undefined;
    if (payload.length > 0) {
      body = encryptPushMessage(payload, subscriptionKeys(target));
      headers["Content-Encoding"] = "aes128gcm";
      headers["Content-Type"] = "application/octet-stream";
    }
    return { url: target.endpoint, init: { method: "POST", headers, body: body as BodyInit | undefined } };
  }

  /**
   * Sends one message and says what to do next; never throws for a network failure (retry).
   * Redirects are not followed, and the request and its answer get send_timeout_seconds.
   */
  async send(target: PushTarget, payload: Uint8Array, opts: PushOptions): Promise<PushOutcome> {
    const { url, init } = this.buildRequest(target, payload, opts);
    const signal = AbortSignal.timeout(this.timeoutMs);
    let res: Response;
    try {
      res = await this.fetchFn(url, { ...init, redirect: "manual", signal });
    } catch (err) {
      return { kind: "retry", status: 0, error: answerForLog(String(err)) };
    }
    return classifyPushAnswer(res, this.now());
  }
}
