-- One account a Minca host carries for (docs/hosting.md-8.5): who it is and its carry space (meta),
-- the spaces it has passed, its links, and the bytes each carried space uses. After carry:closed
-- every table is emptied; only the tombstone in meta (closed_at, closed_space) stays, so the
-- status answers 410 and the closed carry space cannot be connected again.
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE passes (
  space TEXT PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  at INTEGER NOT NULL,
  visibility TEXT NOT NULL,
  read_key TEXT
);

CREATE TABLE links (
  key TEXT PRIMARY KEY,
  topic TEXT NOT NULL,
  blob BLOB NOT NULL,
  until INTEGER NOT NULL,
  at INTEGER NOT NULL,
  written INTEGER NOT NULL
);
CREATE INDEX links_topic ON links (topic);
CREATE INDEX links_until ON links (until);

CREATE TABLE usage (
  space TEXT PRIMARY KEY,
  versions INTEGER NOT NULL,
  bytes INTEGER NOT NULL
);

-- Wakes and receivers (docs/hosting.md): the carry space's sys.wake and sys.receiver records as read,
-- and the pushes still to send (one per receiver and version), retried by the alarm. A receiver
-- whose push service answered 404/410 is marked gone until its record is written again.
CREATE TABLE wakes (
  key TEXT PRIMARY KEY,
  at INTEGER NOT NULL,
  body TEXT NOT NULL
);

CREATE TABLE receivers (
  key TEXT PRIMARY KEY,
  at INTEGER NOT NULL,
  device TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  p256dh TEXT NOT NULL,
  auth TEXT NOT NULL,
  gone INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE pushes (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  receiver TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  payload BLOB NOT NULL,
  topic TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_at INTEGER NOT NULL
);
CREATE INDEX pushes_due ON pushes (next_at);
