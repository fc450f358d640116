-- One Passnote sync room: its own room id (the Ed25519 public key joins are verified under).
-- Peers live in their sockets' attachments (hibernation); nothing about frames is stored.
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
