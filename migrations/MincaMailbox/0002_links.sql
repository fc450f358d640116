-- Accounts a Minca host carries that hold a live link of this mailbox's topic (docs/hosting.md): a
-- fetch's first page asks each of them for its links, served with seq 0.
CREATE TABLE link_accounts (
  account TEXT PRIMARY KEY
);
