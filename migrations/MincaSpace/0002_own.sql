-- The account's own spaces (docs/hosting.md): a carrier whose pass says "own": true (the space is its
-- account registry or contacts space, founded by that account alone). In such a space a version
-- counts only under a note granting /account/write.
ALTER TABLE carriers ADD COLUMN own INTEGER NOT NULL DEFAULT 0;
