-- Nothing lost in ordinary use (the relay's hosting profile, "Carried spaces"): a revoke's
-- optional cutoff (unix ms; only what the key wrote after it stops counting), and the latest
-- version the host took per carry-space record key, deletions included, so last-writer-wins by
-- (at, version id) holds after a deletion too (an older version never brings a record back).
ALTER TABLE revoked ADD COLUMN cutoff INTEGER;
CREATE TABLE latest (
  collection TEXT NOT NULL,
  key TEXT NOT NULL,
  at INTEGER NOT NULL,
  id TEXT NOT NULL,
  PRIMARY KEY (collection, key)
);
