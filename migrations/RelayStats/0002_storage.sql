-- The storage ledger's figures for the status page (docs/browser.md): bytes leased per stored
-- kind across the relay, how many objects hold them, and the total the ledger enforces.
CREATE TABLE storage (
  kind TEXT PRIMARY KEY,
  reserved_bytes INTEGER NOT NULL,
  holders INTEGER NOT NULL,
  total_bytes INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
