// Mailbox topics (docs/mailbox.md): 16-128 characters of [A-Za-z0-9_-], and the RFC 8030
// Topic a wake of that mailbox carries, so a push service keeps only its newest undelivered one.
import { sha256 } from "@noble/hashes/sha2.js";
import * as z from "zod";
import { base64urlEncode, utf8Encode } from "../encoding";
import { MAILBOX_LIMITS } from "../limits";

const TOPIC_RE = new RegExp(`^[A-Za-z0-9_-]{${MAILBOX_LIMITS.topic_min_chars},${MAILBOX_LIMITS.topic_max_chars}}$`);

export const topicSchema = z.string().regex(TOPIC_RE, "topic must be 16-128 characters of [A-Za-z0-9_-]");

export function isTopic(s: unknown): s is string {
  return typeof s === "string" && TOPIC_RE.test(s);
}

/** Topic header of a mailbox's wakes: base64url of the first 24 bytes of SHA-256(UTF-8(topic)), 32 characters. */
export function wakePushTopic(topic: string): string {
  return base64urlEncode(sha256(utf8Encode(topic)).subarray(0, 24));
}
