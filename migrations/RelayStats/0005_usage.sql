-- What the relay's objects cost to run, per Durable Object class since the stats object was made
-- (Prometheus counters, GET /metrics: docs/operating.md): entries by cause (alarm, rpc, fetch,
-- socket_message) and SQLite rows read and written.
CREATE TABLE usage (
  class TEXT NOT NULL,
  metric TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (class, metric)
);
