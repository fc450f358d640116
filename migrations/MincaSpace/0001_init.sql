-- One space a Minca host carries (docs/hosting.md): its id and constitution (meta; carry_of when it is
-- an account's carry space), the accounts that carry it with the read key of each one's pass,
-- and its log of versions, each stored exactly as it arrived.
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE carriers (
  account TEXT PRIMARY KEY,
  at INTEGER NOT NULL,
  read_key TEXT
);

CREATE TABLE log (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  bytes INTEGER NOT NULL,
  version TEXT NOT NULL
);
