-- The audit (docs/hostile.md, "Relay-wide totals"): the ledger's alarm checks the leases that
-- have not changed for storage.lease_audit_age_seconds with their holders, oldest first.
CREATE INDEX leases_by_age ON leases (updated_at);
