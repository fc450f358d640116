// Tally's bounds: frames, envelopes, queues, devices, signaling.

export const TALLY_LIMITS = {
  /** Largest text frame accepted on /tally/v1 (bytes of UTF-8); larger closes with 1009. */
  max_frame_bytes: 262_144,
  /** Largest envelope (its JSON, bytes) accepted by queue_peer_envelope. */
  max_envelope_bytes: 131_072,
  /** Envelope id length, in characters. */
  max_envelope_id_chars: 128,
  /** Stored envelopes per recipient; when full an envelope evicts strangers' oldest, or is refused when theirs would not make room (server/tally/queue-bounds.ts). */
  queue_max_envelopes: 1_000,
  /** Stored bytes per recipient; when full an envelope evicts strangers' oldest, or is refused when theirs would not make room (server/tally/queue-bounds.ts). */
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
  /** Users remembered per user as its contacts, the users it wrote to (connect_peer and webrtc_signal need each side to have written to the other); the one written to longest ago is forgotten first. */
  max_contacts_per_user: 4_096,
} as const;
