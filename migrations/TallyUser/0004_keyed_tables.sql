-- The user's `meta`, `contacts` and `introductions` rows are keyed without a rowid: a row written
-- is one row, not the row and an entry in the key's index (rows written are what a Durable
-- Object's storage is billed by; a new user's first contact writes meta and contacts rows). Same columns,
-- same keys; the rows are moved over in this migration's one transaction.
CREATE TABLE meta_keyed (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO meta_keyed (key, value) SELECT key, value FROM meta;
DROP TABLE meta;
ALTER TABLE meta_keyed RENAME TO meta;
CREATE TABLE contacts_keyed (
  peer_hex TEXT PRIMARY KEY,
  sent INTEGER NOT NULL DEFAULT 0,
  received INTEGER NOT NULL DEFAULT 0,
  at INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO contacts_keyed (peer_hex, sent, received, at) SELECT peer_hex, sent, received, at FROM contacts;
DROP TABLE contacts;
ALTER TABLE contacts_keyed RENAME TO contacts;
CREATE TABLE introductions_keyed (
  device_id TEXT NOT NULL,
  peer_hex TEXT NOT NULL,
  peer_device TEXT NOT NULL,
  PRIMARY KEY (device_id, peer_hex, peer_device)
) WITHOUT ROWID;
INSERT INTO introductions_keyed (device_id, peer_hex, peer_device) SELECT device_id, peer_hex, peer_device FROM introductions;
DROP TABLE introductions;
ALTER TABLE introductions_keyed RENAME TO introductions;
