// Minca's bounds: code-channel rooms, hosted accounts and their spaces, wakes.

export const MINCA_ROOM_LIMITS = {
  /** Peers joined in one code-channel room at once (docs/minca-rooms.md). */
  max_peers: 8,
  /** Sockets open on one room at once, joined or not (joining takes at most 10 s). */
  max_sockets: 16,
  /** Largest message (text frame, bytes of UTF-8) on /minca/v1/rooms; larger closes with 1009. */
  max_message_bytes: 16_384,
  /** Network messages one peer may send in a room's life; more get too_many_messages. */
  max_messages_per_peer: 64,
  /** Characters of a network message's `type`. */
  max_type_chars: 64,
  /** Seconds from the first join until every socket closes with 4008. */
  room_lifetime_seconds: 900,
  /** Seconds an expired room refuses joins (its tombstone); then it keeps nothing. */
  tombstone_seconds: 86_400,
} as const;

export const MINCA_HOST_LIMITS = {
  /** Versions in one POST /minca/v1/spaces/<id>/versions request. */
  max_versions_per_request: 100,
  /** Bytes of one such request's body; larger is refused with 413. */
  max_request_bytes: 2_097_152,
  /** Bytes of one version's JSON (as it arrived); larger is refused with too_large. */
  max_version_bytes: 65_536,
  /** Topic tags on one version. */
  max_topics: 16,
  /** Characters of a collection, a record key or a topic tag. */
  max_name_chars: 256,
  /** Founders in one constitution. */
  max_founders: 16,
  /** P-256 did:keys an isolate keeps decoded (the point, and its WebCrypto key) after checking them once; the least recently used is dropped. Only valid keys are kept. */
  decoded_keys_kept: 1_024,
  /** Notes an isolate remembers as verified (keyed by the exact bytes the note's signature covers and the signature), so the versions a device writes under one note verify it once; the least recently used is dropped. Each version's own signature is verified every time. */
  verified_notes_kept: 1_024,
  /** How far a version's `at` may be ahead of the host's clock when it arrives, in ms; later is refused with from_future (no record frozen beyond deletion). */
  max_future_ms: 600_000,
  /** Bytes an account may go past its quota, and the host past its total, for revokes, deletions (a pass, wake, receiver or link) and carry:closed: a person can always sign out, free space or leave. */
  relief_overdraft_bytes: 65_536,
  /** Versions one carried space holds; past it a request is refused with 507. */
  max_space_versions: 10_000,
  /** Bytes of versions one carried space holds; past it a request is refused with 507. */
  max_space_bytes: 67_108_864,
  /** Spaces (live passes) one account may have carried. */
  max_spaces_per_account: 256,
  /** Accounts that may carry one space at this host; a pass past it is refused with too_many_carriers. */
  max_carriers_per_space: 16,
  /** Bytes of versions across the spaces one account carries (its carry space included); past it 507. */
  max_account_bytes: 268_435_456,
  /** sys.link records kept per account (the carry space's live links). */
  max_links_per_account: 256,
  /** Accounts whose links one mailbox topic serves; a link past it is refused with too_many_link_accounts. */
  max_link_accounts_per_topic: 16,
  /** Links per account a mailbox fetch is answered with: the most recently written. */
  links_served_per_account: 64,
  /** Bytes of link blobs one account answers a mailbox fetch with (of those links, the most recently written first): what one GET loads is bounded by this times max_link_accounts_per_topic. */
  link_bytes_served_per_account: 262_144,
  /** Seconds a read proof's Minca-Time may differ from the host's clock. */
  read_proof_skew_seconds: 60,
  /** Versions per page of a space's log when `limit` is not given, and the most it may ask for. */
  page_max_items: 100,
  /** Bytes of versions per page: a page stops before the version that would pass this (it always holds one). */
  page_max_bytes: 1_048_576,
  /** Longest long-poll `wait` on a space's log, in seconds. */
  max_wait_seconds: 25,
  /** Token bucket per client and space for POST .../versions, counted in versions (each is a signature to verify): burst. */
  write_versions_burst: 200,
  /** Token bucket per client and space for POST .../versions, in versions: sustained per second. */
  write_versions_per_second: 20,
  /** Token bucket per client and space for GET .../versions (a read proof to verify; a long-poll): burst. */
  read_burst: 100,
  /** Token bucket per client and space for GET .../versions: sustained per second. */
  read_per_second: 10,
  /** Bytes of a CarryGrant body. */
  max_grant_bytes: 16_384,
  /** Token bucket per client across every account for POST /minca/v1/host/accounts (each grant may make two objects): burst. */
  grants_burst: 16,
  /** Token bucket per client across every account for POST /minca/v1/host/accounts: sustained per second. */
  grants_per_second: 1,
  /** Token bucket per client across every account for GET /minca/v1/host/accounts/<did> (a read proof to verify): burst. */
  account_reads_burst: 32,
  /** Token bucket per client across every account for GET /minca/v1/host/accounts/<did>: sustained per second. */
  account_reads_per_second: 4,
  /** Seconds a binding (a CarryGrant taken) waits for the account's first version in its carry space; then it expires. */
  unproven_binding_seconds: 3_600,
} as const;

export const MINCA_WAKE_LIMITS = {
  /** sys.wake records kept per account; more are refused with too_many_wakes. */
  max_wakes_per_account: 64,
  /** sys.receiver records kept per account; more are refused with too_many_receivers. */
  max_receivers_per_account: 32,
  /** A wake carries the whole version only when the encrypted push message stays under this many bytes. */
  push_max_bytes: 3_072,
  /** Seconds a push service keeps an undelivered wake (RFC 8030 TTL): one day. */
  push_ttl_seconds: 86_400,
  /** Pushes one account's wakes may send per minute; more wait for the next minute. */
  pushes_per_minute: 60,
  /** Pushes waiting to be sent per account; past it the oldest are dropped. */
  max_pending_pushes: 1_000,
  /** Tries of one push before it is dropped (429 and 5xx are retried). */
  push_max_attempts: 8,
  /** First retry delay, seconds; doubles each try (a longer Retry-After wins). */
  push_retry_base_seconds: 2,
  /** Longest backoff delay, seconds. */
  push_retry_max_seconds: 3_600,
  /** Longest Retry-After honoured, seconds. */
  push_retry_after_max_seconds: 86_400,
} as const;
