-- The users this user has exchanged envelopes with (sent to and received from): connect_peer
-- introduces only those, and the user's own devices (docs/tally.md, "Signaling").
CREATE TABLE contacts (
  peer_hex TEXT PRIMARY KEY,
  sent INTEGER NOT NULL DEFAULT 0,
  received INTEGER NOT NULL DEFAULT 0,
  at INTEGER NOT NULL
);
CREATE INDEX contacts_age ON contacts (at);
