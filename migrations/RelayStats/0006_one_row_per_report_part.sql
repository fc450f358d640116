-- A report writes fewer rows (rows written are what a Durable Object's storage is billed by, and
-- every object's report reaches this one): each class's usage is one row (its metrics as a JSON
-- object) instead of a row per metric, and a per-minute count is keyed without a rowid (one row
-- written, not the row and its key's index entry). The counts are moved over in this
-- migration's one transaction.
CREATE TABLE usage_by_class (
  class TEXT PRIMARY KEY,
  n TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO usage_by_class (class, n) SELECT class, json_group_object(metric, n) FROM usage GROUP BY class;
DROP TABLE usage;
CREATE TABLE minutes_keyed (
  minute INTEGER NOT NULL,
  protocol TEXT NOT NULL,
  metric TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (minute, protocol, metric)
) WITHOUT ROWID;
INSERT INTO minutes_keyed (minute, protocol, metric, n) SELECT minute, protocol, metric, n FROM minutes;
DROP TABLE minutes;
ALTER TABLE minutes_keyed RENAME TO minutes;
