-- A lease checked with its holder and found right is not checked again until it changes (idle
-- costs nothing: no daily call to every holder), so the audit wakes holders once per change.
ALTER TABLE leases ADD COLUMN audited INTEGER NOT NULL DEFAULT 0;
CREATE INDEX leases_to_audit ON leases (audited, updated_at);
