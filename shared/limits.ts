// Every bound the relay enforces, in one place. The information document (GET /) lists this
// object as it is, and the README's limits table is checked against it by a test.

export const COMMON_LIMITS = {
  /** Seconds a socket may stay unauthenticated before it is closed with 4001. */
  auth_timeout_seconds: 10,
  /** Token bucket per socket: sustained messages per second. */
  rate_messages_per_second: 50,
  /** Token bucket per socket: burst size. */
  rate_burst: 200,
  /** rate_limited errors on one socket (within a minute) before it is closed with 4029. */
  rate_limited_before_close: 20,
} as const;

export const TALLY_LIMITS = {
  /** Largest text frame accepted on /tally/v1 (bytes of UTF-8); larger closes with 1009. */
  max_frame_bytes: 262_144,
  /** Largest envelope (its JSON, bytes) accepted by queue_peer_envelope. */
  max_envelope_bytes: 131_072,
  /** Envelope id length, in characters. */
  max_envelope_id_chars: 128,
  /** Stored envelopes per recipient; the oldest is evicted when full. */
  queue_max_envelopes: 1_000,
  /** Stored bytes per recipient; the oldest are evicted when over. */
  queue_max_bytes: 16 * 1024 * 1024,
  /** Stored envelopes per recipient from one sender; that sender's oldest is evicted when full. */
  queue_max_per_sender: 200,
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
} as const;

export const PASSNOTE_LIMITS = {
  // ---- the relay's sync rooms (DESIGN section 5) ----
  /** Peers (joined sockets) in one sync room at once; the next join is refused with room_full. */
  max_peers_per_room: 64,
  /** Largest binary message on /passnote/v2 (8-byte peer id included); larger closes with 1009. */
  max_binary_bytes: 1_048_576,
  /** Largest text frame on /passnote/v2 (join, ping); larger closes with 1009. */
  max_frame_bytes: 1_024,
  // ---- the Passnote protocol (seed 001), what a peer enforces ----
  /** Records per delta frame (seed: at most 500). */
  delta_max_records: 500,
  /** Encoded bytes of records per delta frame, so a delta always fits in one binary message. */
  delta_max_bytes: 262_144,
  /** Milliseconds a delta record's HLC may run ahead of the receiver's clock (maxClockDrift). */
  max_clock_drift_ms: 600_000,
  /** Reconciliation: a mismatch with at most this many records on either side is a leaf. */
  recon_leaf_records: 32,
  /** Reconciliation: probes this deep are leaves whatever their size. */
  recon_max_depth: 24,
  /** Reconciliation: probes per reconcile message; overflow ranges ship as leaves. */
  recon_max_probes: 64,
  /** Frames in flight to one peer (maxInFlightFrames, the ordered send window). */
  max_in_flight_frames: 16,
  /** inst: tokens remembered per transport peer. */
  inst_tokens_remembered: 8,
  /** Nesting depth of a tagged value (lists and maps); deeper is malformed. */
  max_value_depth: 32,
  /** Bytes of a string field that is not a record value (node id, key, collection, HLC, capability). */
  max_name_bytes: 1_024,
  /** Range requests per reconcile message (leaves this side asks the peer to ship). */
  recon_max_requests: 256,
  /** Collections named in one state message. */
  state_max_collections: 1_024,
  /** Wire versions listed in one handshake. */
  handshake_max_versions: 16,
  /** Capabilities listed in one handshake. */
  handshake_max_capabilities: 32,
  /** Identity mode: milliseconds between two re-send-your-hello requests to one peer (the rate limit). */
  rehello_interval_ms: 5_000,
  /** Identity mode: ephemeral keys of accepted ratchet-hellos remembered per peer (a replayed hello changes nothing). */
  ratchet_hellos_remembered: 8,
  /** Identity mode: how far ahead of the expected counter a ratcheted frame may be and still open (skipped keys are discarded). */
  ratchet_max_skip: 1_024,
} as const;

export const LIMITS = {
  common: COMMON_LIMITS,
  tally: TALLY_LIMITS,
  passnote: PASSNOTE_LIMITS,
} as const;

export const CLOSE_CODES = {
  normal: 1000,
  policy: 1008,
  too_large: 1009,
  auth_failed: 4001,
  room_expired: 4008,
  rate_limited: 4029,
} as const;
