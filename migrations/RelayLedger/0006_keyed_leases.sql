-- The leases and the kinds' sums keyed without a rowid, and the leases' indexes only where their
-- queries look (rows written are what a Durable Object's storage is billed by, and each index
-- entry written is one more): a new lease wrote its row, its rowid key's entry and an entry in
-- each of three indexes. Now it writes its row, its entry in the audit's index and, while it lends
-- slack, one in the slack index.
-- - The audit reads the leases not yet checked, oldest first (`WHERE audited = 0 ... ORDER BY
--   updated_at`): its index holds those alone. The index of every lease by age served nothing
--   the audit's does not, and goes.
-- - A claim that needs slack back reads the leases of its kind that lend some, most first
--   (`WHERE kind = ? AND bytes > held ... ORDER BY bytes - held DESC`): its index holds those alone.
-- Same columns, same keys; the rows are moved over in this migration's one transaction.
CREATE TABLE leases_keyed (
  kind TEXT NOT NULL,
  holder TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  held INTEGER NOT NULL DEFAULT 0,
  audited INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (kind, holder)
) WITHOUT ROWID;
INSERT INTO leases_keyed (kind, holder, bytes, updated_at, held, audited)
  SELECT kind, holder, bytes, updated_at, held, audited FROM leases;
DROP TABLE leases;
ALTER TABLE leases_keyed RENAME TO leases;
CREATE INDEX leases_to_audit ON leases (updated_at) WHERE audited = 0;
CREATE INDEX leases_by_slack ON leases (kind, (bytes - held)) WHERE bytes > held;
CREATE TABLE totals_keyed (
  kind TEXT PRIMARY KEY,
  bytes INTEGER NOT NULL,
  holders INTEGER NOT NULL,
  held INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
INSERT INTO totals_keyed (kind, bytes, holders, held) SELECT kind, bytes, holders, held FROM totals;
DROP TABLE totals;
ALTER TABLE totals_keyed RENAME TO totals;
