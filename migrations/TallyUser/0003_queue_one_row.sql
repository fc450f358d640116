-- Storing an envelope writes one row. Every index entry is a row written (and rows written are
-- what a Durable Object's storage is billed by): the queue keyed by what makes an envelope unique
-- (its sender and id), without a rowid, a sequence table or secondary indexes, writes its row and
-- nothing else. Order (seq, assigned by the object), expiry and the queue's sums read the table,
-- which holds at most queue_max_envelopes rows; one sender's rows are a range of the key. The body
-- is the last column, so reading the others does not read its overflow pages.
-- The contacts' age index goes too: only a user past max_contacts_per_user reads that order.
CREATE TABLE queue_one_row (
  from_hex TEXT NOT NULL,
  id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  body TEXT NOT NULL,
  PRIMARY KEY (from_hex, id)
) WITHOUT ROWID;
INSERT INTO queue_one_row (from_hex, id, seq, bytes, expires_at, body)
  SELECT from_hex, id, seq, bytes, expires_at, body FROM queue;
DROP TABLE queue;
ALTER TABLE queue_one_row RENAME TO queue;
DROP INDEX contacts_age;
