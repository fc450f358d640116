-- One Tally user's object: its own identity, the recipient queue, and the introductions that
-- decide who hears peer_disconnect.
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE queue (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  from_hex TEXT NOT NULL,
  id TEXT NOT NULL,
  body TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  queued_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  UNIQUE (from_hex, id)
);
CREATE INDEX queue_expiry ON queue (expires_at);
CREATE INDEX queue_sender ON queue (from_hex, seq);

CREATE TABLE introductions (
  device_id TEXT NOT NULL,
  peer_hex TEXT NOT NULL,
  peer_device TEXT NOT NULL,
  PRIMARY KEY (device_id, peer_hex, peer_device)
);
