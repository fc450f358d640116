-- Accounts a Minca host carries that hold a live link of this mailbox's topic (DESIGN 8.4): a
-- fetch's first page asks each of them for its links, served with seq 0.
CREATE TABLE link_accounts (
  account TEXT PRIMARY KEY
);
