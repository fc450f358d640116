-- The operator's lists (the admin API, docs/admin-api.md): banned and allowed Tally keys, blocked
-- client addresses, blocked mailbox topics. One row per entry, with the reason given.
CREATE TABLE entries (
  list TEXT NOT NULL,
  value TEXT NOT NULL,
  reason TEXT NOT NULL,
  added_at INTEGER NOT NULL,
  PRIMARY KEY (list, value)
);

-- The key/value table every object has (durable-objects/base/meta.ts).
CREATE TABLE IF NOT EXISTS meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
