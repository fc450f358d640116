-- Keys the relay generates once and keeps when no Worker secret provides them (the local default).
CREATE TABLE keys (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
