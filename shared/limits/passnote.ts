// Passnote's bounds: rooms, records, sync.

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
