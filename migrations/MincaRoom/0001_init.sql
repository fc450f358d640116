-- One code-channel room (Minca, docs/minca-rooms.md): its id, when it was first joined (its life
-- and its tombstone run from then), and whether it has expired. Peers live in socket
-- attachments. Once the tombstone lapses the object deletes everything, this table included.
CREATE TABLE room (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  room TEXT NOT NULL,
  first_join_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  refuses_until INTEGER NOT NULL,
  expired INTEGER NOT NULL DEFAULT 0
);
