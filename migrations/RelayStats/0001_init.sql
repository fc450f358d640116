-- The stats object (docs/browser.md): each reporting object's current values, under an opaque
-- key, and per-minute event counts by protocol for the last hour. No names of users, topics or rooms.
CREATE TABLE reporters (
  reporter TEXT PRIMARY KEY,
  protocol TEXT NOT NULL,
  connections INTEGER NOT NULL DEFAULT 0,
  envelopes_stored INTEGER NOT NULL DEFAULT 0,
  rooms_open INTEGER NOT NULL DEFAULT 0,
  mailbox_items INTEGER NOT NULL DEFAULT 0,
  updated_at INTEGER NOT NULL
);
CREATE TABLE minutes (
  minute INTEGER NOT NULL,
  protocol TEXT NOT NULL,
  metric TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (minute, protocol, metric)
);
