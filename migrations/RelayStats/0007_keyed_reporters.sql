-- Each reporting object's row and each running total keyed without a rowid: a new reporter (every
-- object's first report, and again after it held nothing) is one row written, not the row and its
-- key's index entry, and so is its deletion (rows written are what a Durable Object's storage is
-- billed by). Same columns and keys; the rows are moved over in this migration's one transaction.
CREATE TABLE reporters_keyed (
  reporter TEXT PRIMARY KEY,
  protocol TEXT NOT NULL,
  connections INTEGER NOT NULL DEFAULT 0,
  envelopes_stored INTEGER NOT NULL DEFAULT 0,
  rooms_open INTEGER NOT NULL DEFAULT 0,
  mailbox_items INTEGER NOT NULL DEFAULT 0,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO reporters_keyed (reporter, protocol, connections, envelopes_stored, rooms_open, mailbox_items, updated_at)
  SELECT reporter, protocol, connections, envelopes_stored, rooms_open, mailbox_items, updated_at FROM reporters;
DROP TABLE reporters;
ALTER TABLE reporters_keyed RENAME TO reporters;
CREATE TABLE totals_keyed (
  protocol TEXT NOT NULL,
  metric TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (protocol, metric)
) WITHOUT ROWID;
INSERT INTO totals_keyed (protocol, metric, n) SELECT protocol, metric, n FROM totals;
DROP TABLE totals;
ALTER TABLE totals_keyed RENAME TO totals;
