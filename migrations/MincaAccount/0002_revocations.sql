-- Revocations and the account's own spaces (docs/hosting.md): the keys the account revoked (sys.revoke
-- in its carry space, kept for good), the signing key that wrote each record the host keeps (so a
-- revoke can make what that key wrote stop counting), and whether a pass names one of the
-- account's own spaces ("own": true: the account registry, the contacts space).
CREATE TABLE revoked (
  did TEXT PRIMARY KEY,
  at INTEGER NOT NULL
);
ALTER TABLE passes ADD COLUMN author TEXT;
ALTER TABLE passes ADD COLUMN own INTEGER NOT NULL DEFAULT 0;
ALTER TABLE links ADD COLUMN author TEXT;
ALTER TABLE wakes ADD COLUMN author TEXT;
ALTER TABLE receivers ADD COLUMN author TEXT;
