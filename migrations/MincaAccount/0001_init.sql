-- One account a Minca host carries for (DESIGN 8.3-8.5): who it is and its carry space (meta),
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
