-- Carrier slots (the relay's hosting profile, "Carried spaces"): the order in which accounts
-- took their slot, so that a pass proven with the constitution's own read key takes the slot of
-- the most recently added one that is not.
ALTER TABLE carriers ADD COLUMN added INTEGER NOT NULL DEFAULT 0;
