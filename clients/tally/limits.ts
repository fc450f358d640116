// The Tally client's own bounds and timings, in one place (the relay's are in shared/limits.ts).
// docs/tally.md states why each is what it is.
const DAY_MS = 86_400_000;

export const CLIENT_LIMITS = {
  /** How long a processed (from_user_id, id) is remembered (7): three times the relay's 30-day queue lifetime. */
  processed_ttl_ms: 90 * DAY_MS,
  /**
   * How long an outbox message is retried before it is given up (8.2, 7): its last hand-off to a
   * relay then expires there (30 days) well before any recipient forgets the id (90 days).
   */
  outbox_max_age_ms: 45 * DAY_MS,
  /** Reconnect backoff: the first delay and the cap; every delay is jittered over its upper half. */
  reconnect_first_ms: 500,
  /** The cap: a client is back within 10 s of its relay being back (a restart), jittered over 5-10 s. */
  reconnect_max_ms: 10_000,
  /**
   * A socket that is not registered this long after it was opened is given up (and retried):
   * `connect()` rejects within this time even when the relay accepts TCP and never answers. A
   * refused connection rejects at once.
   */
  connect_timeout_ms: 10_000,
  /** Pings on a registered socket, well inside the relay's idle bound (shared/limits.ts). */
  ping_interval_ms: 25_000,
  /** A ping unanswered this long: the socket is taken for dead and reopened. */
  pong_timeout_ms: 10_000,
  /** rate_limited without retry_after_ms (an older relay): wait this long before sending more. */
  rate_limited_default_wait_ms: 1_000,
  /** A message whose handler failed is run again after this long (option handlerRetryMs), then doubling. */
  handler_retry_first_ms: 1_000,
  /** ... up to this interval, for as long as the client is open. */
  handler_retry_max_ms: 30_000,
  /** Failed messages run again at once at most; past it the oldest is left to the relay's and the sender's copies. */
  handler_retries_kept: 1_000,
  /**
   * How long a message the app ignored stays known as ignored after its processed id expired
   * (sync does not hand it to the app again, hellos name it): a year.
   */
  ignored_ttl_ms: 365 * DAY_MS,
  /** Ignored marks kept (and named in hellos) at most: the newest ones. */
  max_ignored_marks: 10_000,
  /** How often an open client prunes its store (store.prune), besides after each queue_drained. */
  prune_interval_ms: 3_600_000,
} as const;
