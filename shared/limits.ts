// Every bound the relay enforces, in one place. The information document (GET /) lists this
// object as it is, and the README's limits table is checked against it by a test.

export const COMMON_LIMITS = {
  /** Seconds a socket may stay unauthenticated before it is closed with 4001. */
  auth_timeout_seconds: 10,
  /** Retry-After of a 503 unavailable when the relay is out of resources (open files, memory) for new work. */
  unavailable_retry_seconds: 5,
  /** Token bucket per socket: sustained messages per second (room for bulk sync and fan-out). */
  rate_messages_per_second: 200,
  /** Token bucket per socket: burst size. */
  rate_burst: 400,
  /** rate_limited errors on one socket (within a minute) before it is closed with 4029. */
  rate_limited_before_close: 20,
  /** Sockets one object keeps open unauthenticated (not yet registered / joined), below every object's cap of authenticated ones; one more closes the oldest socket of the client holding the most of them with 1013 (try again later). A socket that sent its register / join is never closed for it. */
  max_unauthenticated_sockets_per_object: 8,
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

export const TALLY_LIMITS = {
  /** Largest text frame accepted on /tally/v1 (bytes of UTF-8); larger closes with 1009. */
  max_frame_bytes: 262_144,
  /** Largest envelope (its JSON, bytes) accepted by queue_peer_envelope. */
  max_envelope_bytes: 131_072,
  /** Envelope id length, in characters. */
  max_envelope_id_chars: 128,
  /** Stored envelopes per recipient; when full an envelope evicts strangers' oldest, or is refused when theirs would not make room (shared/tally/queue-bounds.ts). */
  queue_max_envelopes: 1_000,
  /** Stored bytes per recipient; when full an envelope evicts strangers' oldest, or is refused when theirs would not make room (shared/tally/queue-bounds.ts). */
  queue_max_bytes: 16 * 1024 * 1024,
  /**
   * The share of a recipient's queue (of queue_max_envelopes and of queue_max_bytes) strangers'
   * envelopes hold together: a stranger's envelope past it evicts strangers' oldest (never a
   * contact's), so fresh keys cannot keep a new correspondent out for good, and contacts keep the rest.
   */
  queue_strangers_share: 0.5,
  /** Stored envelopes per recipient from one sender; that sender's oldest is evicted when full. */
  queue_max_per_sender: 200,
  /** Stored bytes per recipient from one sender; that sender's oldest are evicted when over (a quarter of the queue). */
  queue_max_bytes_per_sender: 4 * 1024 * 1024,
  /** Days a stored envelope is kept before it expires. */
  queue_ttl_days: 30,
  /** Devices (sockets) one user may have registered at once. */
  max_devices_per_user: 16,
  /** Largest webrtc_signal `signal` value (bytes of its JSON). */
  max_signal_bytes: 16_384,
  /** Seconds the created_at of a register auth event may differ from the relay's clock. */
  auth_max_skew_seconds: 600,
  /** Introductions (peer_connect pairs) remembered per device, for peer_disconnect. */
  max_introductions_per_device: 1_024,
  /** Envelopes for one recipient carried by one call between user objects (they wait while one is in flight). */
  rpc_batch_envelopes: 32,
  /** Seconds a registered socket may stay silent (no message, no ping) before the relay closes it with 4408. */
  idle_timeout_seconds: 90,
  /** Users remembered per user as having exchanged envelopes with it (connect_peer and webrtc_signal reach only those); the oldest it never wrote to are forgotten first. */
  max_contacts_per_user: 4_096,
} as const;

export const PASSNOTE_LIMITS = {
  // ---- the relay's sync rooms (docs/passnote.md) ----
  /** Peers (joined sockets) in one sync room at once; the next join is refused with room_full. */
  max_peers_per_room: 64,
  /** Largest binary message on /passnote/v2 (8-byte peer id included); larger closes with 1009. */
  max_binary_bytes: 1_048_576,
  /** Largest text frame on /passnote/v2 (join, ping); larger closes with 1009. */
  max_frame_bytes: 1_024,
  // ---- the Passnote protocol (the Passnote protocol), what a peer enforces ----
  /** Records per delta frame (seed: at most 500). */
  delta_max_records: 500,
  /** Encoded bytes of records per delta frame, so a delta always fits in one binary message. */
  delta_max_bytes: 262_144,
  /**
   * Encoded bytes of one record (key, value, flags, HLC, crdt type): the largest a local write may
   * be, so that a delta carrying it alone, sealed and prefixed, fits in one binary message.
   */
  record_max_bytes: 1_040_384,
  /** Milliseconds a delta record's HLC may run ahead of the receiver's clock (maxClockDrift). */
  max_clock_drift_ms: 600_000,
  /**
   * The reference peer runs an anti-entropy pass this often with every agreed peer (one digest per
   * channel; per collection only where it differs), so a record the clock bound refused (or any
   * frame lost) is offered again without a reconnect.
   */
  anti_entropy_interval_ms: 300_000,
  /** Reconciliation: a mismatch with at most this many records on either side is a leaf. */
  recon_leaf_records: 32,
  /** Reconciliation: probes this deep are leaves whatever their size. */
  recon_max_depth: 24,
  /** Reconciliation: probes per reconcile message; overflow ranges ship as leaves. */
  recon_max_probes: 64,
  /** Frames in flight to one peer (maxInFlightFrames, the ordered send window). */
  max_in_flight_frames: 16,
  /**
   * Frames queued to one peer behind the send window. The opening probes a state asks for are fed
   * in as the queue drains, so ordinary sync stays far below it; past it a frame is not queued
   * (handshakes and ratchet-hellos excepted) and, once the queue has drained, the peer is asked
   * for its state again, so what the frame carried is reconciled anew.
   */
  send_queue_max_frames: 4_096,
  /** inst: tokens remembered per transport peer. */
  inst_tokens_remembered: 8,
  /** Nesting depth of a tagged value (lists and maps); deeper is malformed. */
  max_value_depth: 32,
  /** Bytes of a string field that is not a record value (node id, key, collection, HLC, capability). */
  max_name_bytes: 1_024,
  /** Range requests per reconcile message (leaves this side asks the peer to ship). */
  recon_max_requests: 256,
  /** recon2: buckets a mismatched range is split into, per level. */
  recon2_split: 16,
  /** recon2: a mismatch where the responder holds at most this many records is answered with its ids. */
  recon2_leaf_ids: 32,
  /** recon2: fingerprints a reply aims at; with few mismatches a range is split several levels (16^k buckets) at once, up to this many. */
  recon2_budget: 1_024,
  /** recon2: ranges per reconcile2 message. */
  recon2_max_ranges: 16_384,
  /** recon2: ids in one range of a reconcile2 message (an id list or a need list). */
  recon2_max_ids: 256,
  /** recon2: encoded bytes of a reply's ranges; past it, everything left goes as one fingerprint. */
  recon2_max_bytes: 262_144,
  /**
   * Encoded bytes of the watermarks in one state message this peer sends: past it, the rest go in
   * another state, each one complete for a peer that reads states one by one. A state received is
   * read whatever its number of entries (bounded only by the binary message).
   */
  state_max_bytes: 262_144,
  /** Wire versions kept from one handshake; the excess is ignored, not the handshake. */
  handshake_max_versions: 16,
  /** Capabilities kept from one handshake (a name over max_name_bytes is skipped); the excess is ignored. */
  handshake_max_capabilities: 32,
  /** Identity mode: milliseconds between two re-send-your-hello requests to one peer (the rate limit). */
  rehello_interval_ms: 5_000,
  /** Identity mode: ephemeral keys of accepted ratchet-hellos remembered per peer (a replayed hello changes nothing). */
  ratchet_hellos_remembered: 8,
  /** Identity mode: how far ahead of the expected counter a ratcheted frame may be and still open (skipped keys are discarded). */
  ratchet_max_skip: 1_024,
} as const;

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
} as const;

export const STATS_LIMITS = {
  /** Longest a count waits in its object before it is sent to the stats object (the status page's staleness), ms. */
  flush_interval_ms: 2_000,
  /** Minutes of per-minute counts kept and charted. */
  window_minutes: 60,
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

export const LIMITS = {
  common: COMMON_LIMITS,
  tally: TALLY_LIMITS,
  passnote: PASSNOTE_LIMITS,
  minca_rooms: MINCA_ROOM_LIMITS,
  mailbox: MAILBOX_LIMITS,
  webpush: WEBPUSH_LIMITS,
  minca_host: MINCA_HOST_LIMITS,
  minca_wake: MINCA_WAKE_LIMITS,
  storage: STORAGE_LIMITS,
  stats: STATS_LIMITS,
  admin: ADMIN_LIMITS,
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
