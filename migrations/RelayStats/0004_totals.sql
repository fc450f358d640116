-- Running totals of each counted event since the stats object was made (Prometheus counters,
-- GET /metrics: docs/operating.md), beside the per-minute window.
CREATE TABLE totals (
  protocol TEXT NOT NULL,
  metric TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (protocol, metric)
);
