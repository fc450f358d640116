// The bounds every protocol shares: sockets, requests, the relay-wide storage totals, the stats
// object, the operator's credentials, and the WebSocket close codes.

export const COMMON_LIMITS = {
  /** Seconds a socket may stay unauthenticated before it is closed with 4001. */
  auth_timeout_seconds: 10,
  /** Retry-After of a 503 unavailable when the relay is out of resources (open files, memory) for new work. */
  unavailable_retry_seconds: 5,
  /** Tries of an idempotent call to a Durable Object whose error the runtime marks retryable (never when overloaded); other calls are made once. */
  object_call_tries: 3,
  /** Wait before the second try of such a call, in milliseconds; doubled before each later one, with jitter (half to all of it). */
  object_retry_wait_ms: 50,
  /** Token bucket per socket: sustained messages per second (room for bulk sync and fan-out). */
  rate_messages_per_second: 200,
  /** Token bucket per socket: burst size. */
  rate_burst: 400,
  /** rate_limited errors on one socket (within a minute) before it is closed with 4029. */
  rate_limited_before_close: 20,
  /** Sockets one object keeps open unauthenticated (not yet registered / joined), below every object's cap of authenticated ones; one more closes, among those past their grace (unauthenticated_grace_ms), the oldest socket of the client holding the most of them with 1013 (try again later). A socket that sent its register / join is never closed for it. */
  max_unauthenticated_sockets_per_object: 8,
  /**
   * Milliseconds a new unauthenticated socket is never closed to make room (its grace): time for
   * the challenge's round trip and the device's signature, a slow device's 250 ms answer eight
   * times over. Only a socket that has not answered within it may be crowded out.
   */
  unauthenticated_grace_ms: 2_000,
  /**
   * Sockets one object keeps open unauthenticated when none of them may be closed to make room
   * (each still in its grace or being checked): past max_unauthenticated_sockets_per_object, new
   * ones are still accepted up to this many; one more is HTTP 429 with Retry-After (when the
   * oldest leaves its grace). A flood of up to 64 upgrades a second to one object then never
   * keeps a device out.
   */
  max_unauthenticated_sockets_per_object_in_grace: 128,
  /** Sockets one client (address) keeps open unauthenticated on one object; one more closes that client's own oldest with 1013. Not applied in shared mode (no trusted client address). */
  max_unauthenticated_sockets_per_client_per_object: 4,
  /** Sockets one client (address) keeps open unauthenticated across the relay (counted per isolate: the whole relay under `npm start`); one more is HTTP 429 with Retry-After. Not applied in shared mode. */
  max_unauthenticated_sockets_per_client: 32,
  /**
   * Sockets kept open unauthenticated across the relay, every client together (counted per
   * isolate: the whole relay under `npm start`); one more upgrade is HTTP 503 with Retry-After.
   * The bound that holds in shared mode too, where the per-client ones do not: a flood of parked
   * sockets cannot take the relay's file descriptors from /healthz and registered devices.
   */
  max_unauthenticated_sockets: 1_024,
  /** Largest frame (text or binary, bytes) read from a socket before it authenticates: a register or join fits; larger closes with 1009. */
  max_unauthenticated_frame_bytes: 8_192,
  /** Token bucket per socket before it authenticates: burst (a register or join, and a few more). */
  unauthenticated_rate_burst: 8,
  /** Token bucket per socket before it authenticates: sustained frames per second. */
  unauthenticated_messages_per_second: 2,
  /** New sockets one client (address, docs/hostile.md) may open to one object: burst, then this many per second; more are answered HTTP 429 with Retry-After. */
  client_connect_burst: 64,
  /** New sockets one client may open to one object per second, sustained (past the burst). */
  client_connects_per_second: 4,
  /** Clients per object whose last socket's rate state (bucket and rate_limited count) a reconnect takes over; the oldest are forgotten. */
  clients_remembered_per_object: 1_024,
  /** Request buckets (client and kind of request) one object holds in memory for its per-client rate limits (mailbox, hosting); past it the least recently used one is forgotten. */
  client_buckets_per_object: 10_000,
  /**
   * Requests one client (address) may send the Worker addressed to a named object (a mailbox
   * topic, a space, a hosted account, a Tally user's or a room's upgrade), across every name:
   * burst. Per-name buckets never throttle a client that makes up new names; this one does. Not
   * applied without a trusted client address (shared mode).
   */
  client_object_requests_burst: 512,
  /** Requests addressed to named objects one client may send per second, sustained (past the burst). */
  client_object_requests_per_second: 32,
  /** Bytes of a request body the relay reads and throws away when the body is over its bound or on a route that takes none, so that the answer (413, or the route's) arrives whole; past this it stops reading. */
  max_drained_body_bytes: 16 * 1024 * 1024,
  /** Nesting depth (arrays and objects) of JSON a client sends, over HTTP (deeper is 400) and in WebSocket text frames (deeper is invalid_message), checked on the raw text before parsing. */
  max_json_depth: 64,
} as const;

/**
 * Relay-wide totals per stored kind (docs/hostile.md, "Nothing is stored for free";
 * docs/hostile.md, "Relay-wide totals"): the defaults of the settings STORAGE_TALLY_BYTES,
 * STORAGE_MAILBOX_BYTES and STORAGE_HOST_BYTES (the information document shows the values in force).
 * Objects that store reserve bytes from the one RelayLedger object in leases.
 */
export const STORAGE_LIMITS = {
  /** Bytes of stored envelopes across every Tally queue of the relay; past it an envelope that would be stored is refused with storage_full. */
  tally_bytes: 2 * 1024 * 1024 * 1024,
  /** Bytes of item blobs across every Minca mailbox of the relay; past it a POST is refused with 507 storage_full. */
  mailbox_bytes: 1024 * 1024 * 1024,
  /** Bytes of versions across every account the Minca host carries for (the host-wide total); past it 507 storage_full. */
  host_bytes: 8 * 1024 * 1024 * 1024,
  /**
   * What one stored row costs a total beyond its own bytes (its key, indexes and its share of
   * SQLite's pages): every row of every kind is charged this plus its bytes, so rows of no bytes
   * (an empty item, a receiver, a link, a contact, a binding) still count.
   */
  row_overhead_bytes: 128,
  /**
   * What an object's database takes on disk with its tables made and nothing in them, per stored
   * kind (measured under `npm start`'s workerd: the `.sqlite` file once the object's instance is
   * gone, one 4 KiB page per table and index plus the header page; docs/hostile.md, "The cost of a
   * database"). An object that holds any row is charged this once, beside its rows, so a thousand
   * tiny names cost what they take. A Tally user: 16 pages.
   */
  database_bytes_tally: 65_536,
  /** The same for a mailbox topic's database: 17 pages. */
  database_bytes_mailbox: 69_632,
  /** The same for a hosted account's database: 26 pages. */
  database_bytes_host: 106_496,
  /**
   * The same for a carried space's database (MincaSpace): 11 pages, counted by the same rule from
   * its migrations (8 pages with sqlite3, plus the 3 the runtime and the object's meta add, as for
   * an account). Charged against the host total, to each account that pays for versions in the
   * space (several payers each pay it: the safe side).
   */
  database_bytes_space: 45_056,
  /** Smallest lease an object asks the ledger for beyond what it needs now. */
  lease_min_bytes: 65_536,
  /** Largest lease an object asks for beyond what it needs now (a lease grows with what the object holds, up to this). */
  lease_max_bytes: 1_048_576,
  /**
   * Seconds a lease stays unchanged before the ledger asks its holder what it recorded: what the
   * holder does not hold (a grant it never recorded, a give-back that did not arrive) goes back.
   */
  lease_audit_age_seconds: 86_400,
  /** Leases the ledger checks with its holders per alarm (the next batch follows a second later). */
  lease_audit_batch: 64,
  /**
   * Holders the ledger asks per round to give back their slack (leased beyond what they hold) when
   * a claim finds the leases, but not what is held, at the total: those lending the most first.
   */
  lease_reclaim_batch: 16,
  /** Rounds of taking slack back one claim may run before it is refused (each round reads the ledger afresh). */
  lease_reclaim_rounds: 4,
  /**
   * The share of each HTTP-fed total (mailbox_bytes, host_bytes) one client address may store
   * within share_period_seconds: a byte budget of this fraction of the total, refilled
   * evenly over the period, charged for the rows it stores (row_overhead_bytes plus their bytes).
   * Past it 429 rate_limited with Retry-After. Not applied without a trusted client address.
   */
  client_share: 1 / 16,
  /** The period over which a client's share (and a Tally sender's) refills in full: the longest a mailbox item or a Tally envelope is kept. */
  share_period_seconds: 30 * 86_400,
  /** Client addresses whose share an isolate remembers; past it the least recently used is forgotten. */
  client_shares_remembered: 10_000,
  /**
   * The share of the Tally total (tally_bytes) one sender (key) may have stored across all its
   * recipients within share_period_seconds, kept in the sender's own object: past it an envelope
   * is not stored (online devices still get it; else queued not_stored).
   */
  sender_share: 1 / 64,
  /**
   * The fraction of a sender's share written ahead of its charges within a burst: the share kept
   * in the sender's object is never more than what is left (an object reset before its deferred
   * write loses the sender at most this much of its share, never gives it more), and one write
   * covers the envelopes stored until this much more is charged; the exact share is written once
   * after the burst.
   */
  sender_share_written_ahead: 1 / 64,
} as const;

export const STATS_LIMITS = {
  /** Longest a count waits in its object before it is sent to the stats object (the status page's staleness), ms. */
  flush_interval_ms: 2_000,
  /** Minutes of per-minute counts kept and charted. */
  window_minutes: 60,
  /**
   * Distinct keys (reporters, classes, totals, per-minute counts) the stats object merges in memory
   * before it writes them; at this many the batch is written at once, before its alarm.
   */
  max_pending_keys: 1_000,
} as const;

/** The operator's credentials: the status page login and the admin API (docs/operating.md, docs/admin-api.md). */
export const ADMIN_LIMITS = {
  /** Wrong credentials one client address may present per window before every try is refused (429) until the window ends. */
  auth_failures_per_window: 5,
  /** The window of auth_failures_per_window, seconds. */
  auth_failure_window_seconds: 60,
  /** Client addresses whose wrong credentials an isolate remembers; past it the least recently failed one is forgotten. */
  auth_failure_clients: 10_000,
  /** How long a status page login lasts (its cookie), seconds. */
  session_seconds: 43_200,
  /** Largest admin API request body, bytes. */
  max_rpc_body_bytes: 16_384,
  /** Largest gap between a NIP-98 event's created_at and the relay's clock, seconds. */
  nip98_max_skew_seconds: 60,
  /** NIP-98 event ids the admin API remembers as used (each is accepted once within the skew window; per isolate). */
  nip98_events_remembered: 1_024,
  /** How long the Worker keeps the ban and block lists in memory before asking the policy object again, ms: a ban reaches every isolate within this. */
  policy_cache_ms: 5_000,
  /** Entries of each ban, allow or block list. */
  max_list_entries: 10_000,
} as const;

export const CLOSE_CODES = {
  normal: 1000,
  /** The relay is shutting down (a self-hosted relay on SIGTERM); reconnect. */
  going_away: 1001,
  policy: 1008,
  too_large: 1009,
  /** The socket failed on the relay's side (webSocketError). */
  internal_error: 1011,
  /** Crowded out: the object had its fill of unauthenticated sockets and this was the oldest; reconnect with backoff. */
  try_again_later: 1013,
  auth_failed: 4001,
  room_expired: 4008,
  /** A registered socket stayed silent past the idle bound (a half-open connection); reconnect. */
  idle_timeout: 4408,
  rate_limited: 4029,
} as const;
