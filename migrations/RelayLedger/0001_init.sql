-- The relay's storage ledger (docs/hostile.md, "Relay-wide totals"): the bytes leased to each
-- object that stores, per kind, under the object's opaque id, and each kind's sum (kept with
-- every change, so a lease is decided in O(1)). No names of users, topics or accounts.
CREATE TABLE leases (
  kind TEXT NOT NULL,
  holder TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (kind, holder)
);
CREATE TABLE totals (
  kind TEXT PRIMARY KEY,
  bytes INTEGER NOT NULL,
  holders INTEGER NOT NULL
);
