-- The key/value table every object has (durable-objects/base/meta.ts): its name, kept with its first write.
CREATE TABLE IF NOT EXISTS meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
