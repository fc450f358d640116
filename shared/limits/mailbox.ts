// The bounds of Minca mailboxes and of the Web Push they send.

export const MAILBOX_LIMITS = {
  /** Shortest topic, in characters of [A-Za-z0-9_-]. */
  topic_min_chars: 16,
  /** Longest topic, in characters of [A-Za-z0-9_-]. */
  topic_max_chars: 128,
  /** Largest item body (bytes); larger is refused with 413. */
  max_body_bytes: 65_536,
  /** Seconds ahead an item's `until` defaults to, and the most it may be. */
  max_until_seconds: 30 * 86_400,
  /** Seconds of client clock skew forgiven beyond max_until_seconds (the stored until is capped). */
  until_skew_seconds: 300,
  /** Items per page when `limit` is not given, and the most `limit` may ask for. */
  page_max_items: 100,
  /** Blob bytes per page: a page stops before the item that would pass this (it always holds one). */
  page_max_bytes: 1_048_576,
  /** Longest long-poll `wait`, in seconds. */
  max_wait_seconds: 25,
  /** Items a topic holds; the oldest is evicted when over. */
  max_items: 1_000,
  /** Blob bytes a topic holds; the oldest items are evicted when over. */
  max_bytes: 4 * 1024 * 1024,
  /** Push receivers per topic. */
  max_receivers: 32,
  /** Largest receiver registration body (a PushSubscription's JSON), bytes. */
  max_receiver_body_bytes: 8_192,
  /** Token bucket per client and topic for writes (POST item, POST/DELETE receiver): burst. */
  write_burst: 100,
  /** Token bucket per client and topic for writes: sustained per second. */
  write_per_second: 10,
  /** Token bucket per client and topic for reads (GET): burst. */
  read_burst: 200,
  /** Token bucket per client and topic for reads: sustained per second. */
  read_per_second: 20,
  /** A wake carries the blob only when its whole JSON body stays under this many bytes. */
  wake_max_bytes: 2_048,
  /** Tries of one wake to one receiver before it is dropped (429 and 5xx are retried). */
  push_max_attempts: 8,
  /** First retry delay, seconds; doubles each try (a longer Retry-After wins). */
  push_retry_base_seconds: 10,
  /** Longest backoff delay, seconds. */
  push_retry_max_seconds: 3_600,
  /** Longest Retry-After honoured, seconds (a longer one waits this long). */
  push_retry_after_max_seconds: 86_400,
  /** Wakes sent per alarm run; more are sent by the next run straight after. */
  push_batch: 50,
} as const;

export const WEBPUSH_LIMITS = {
  /** RFC 8291: record size written in the header of the single aes128gcm record. */
  record_size: 4_096,
  /** Largest plaintext one push message carries: the body stays within 4096 bytes (86 header, 16 tag, 1 delimiter). */
  max_payload_bytes: 3_993,
  /** RFC 8292 JWT `exp`: seconds ahead of now (at most 12 h). */
  vapid_exp_seconds: 12 * 3_600,
  /** A cached JWT is reused for one push-service origin while at least this many seconds remain. */
  vapid_min_remaining_seconds: 3_600,
  /** Longest push endpoint URL accepted, characters. */
  max_endpoint_chars: 2_048,
  /** RFC 8030 Topic: at most this many base64url characters. */
  topic_max_chars: 32,
  /** Largest TTL sent, seconds (4 weeks, what the big push services keep). */
  max_ttl_seconds: 2_419_200,
  /** Seconds one push (request and the answer's body) may take before it is given up and retried. */
  send_timeout_seconds: 10,
  /** Bytes of a push service's answer body read at most (the rest is cancelled unread). */
  max_answer_bytes: 4_096,
  /** Characters of a push service's answer text kept for the log (control characters removed). */
  max_logged_answer_chars: 200,
  /** Pushes per second the whole relay sends to one push origin, a registrable domain with all its subdomains (token bucket, sustained). */
  origin_pushes_per_second: 100,
  /** Pushes the whole relay may send to one push origin (registrable domain) at once (token bucket, burst). */
  origin_push_burst: 200,
  /** Pushes per second the whole relay sends, to every push origin together (token bucket, sustained). */
  relay_pushes_per_second: 500,
  /** Pushes the whole relay may send at once, to every push origin together (token bucket, burst). */
  relay_push_burst: 1_000,
  /** Tries of one push that may end with no answer (connection failed, timed out); then it is dropped. */
  push_max_unanswered_tries: 3,
  /** Distinct push origins (registrable domains) among one mailbox topic's receivers, or one hosted account's. */
  max_push_origins_per_topic: 4,
  /** Distinct push origins (registrable domains) one client may register mailbox receivers at within push_origin_window_seconds. */
  max_push_origins_per_client: 8,
  /** Seconds a push origin a client registered a receiver at counts toward its max_push_origins_per_client. */
  push_origin_window_seconds: 3_600,
} as const;
