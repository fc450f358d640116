-- What each holder holds, beside what it is leased (docs/hostile.md, "Relay-wide totals"): the
-- bytes it said it holds or must hold with its last claim or give-back, and each kind's sum. The
-- slack of a lease (leased minus held) is lent, never kept: a claim the leases leave no room for,
-- while what is held leaves room, takes slack back from the holders with the most.
ALTER TABLE leases ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
ALTER TABLE totals ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
UPDATE leases SET held = bytes;
UPDATE totals SET held = bytes;
-- The lenders a claim asks first: the most slack of a kind.
CREATE INDEX leases_by_slack ON leases (kind, (bytes - held));
