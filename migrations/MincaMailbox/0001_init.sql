-- One mailbox (one topic): its items, the push receivers of its wakes, and the wakes still to
-- send (one row per receiver and item, retried by alarm).
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE items (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  until INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  blob BLOB NOT NULL
);
CREATE INDEX items_until ON items (until);

CREATE TABLE receivers (
  id TEXT PRIMARY KEY,
  endpoint TEXT NOT NULL UNIQUE,
  p256dh TEXT NOT NULL,
  auth TEXT NOT NULL,
  created_at INTEGER NOT NULL
);

CREATE TABLE deliveries (
  receiver_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_at INTEGER NOT NULL,
  PRIMARY KEY (receiver_id, seq)
);
CREATE INDEX deliveries_due ON deliveries (next_at);
