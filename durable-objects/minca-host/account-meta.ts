// The keys a MincaAccount keeps in its `meta` table (base/meta.ts), each named once here: a key
// not in this list is a type error. TOMBSTONE_KEYS is the one list of what outlives carry:closed
// (docs/hosting.md, "The tombstone"): kept by MincaAccount.keepOnlyTombstone, cleared by the
// first proof of a new binding, charged by AccountUsage, read by the status answer.

/** The tombstone of a carry:closed: when, which carry space, and its read key (a status proof with it answers 410). */
export const TOMBSTONE_KEYS = ["closed_at", "closed_space", "closed_read_key"] as const;
type TombstoneKey = (typeof TOMBSTONE_KEYS)[number];

export type AccountMetaKey =
  | TombstoneKey
  /** The account's did (the object's name, kept for a start by id alone). */
  | "account"
  /** The carry space of the binding, and the key that opens it (base64url). */
  | "carry_space"
  | "carry_key"
  /** When an unproven binding was made (ms); "claimed" once a version proved it. */
  | "bound_at"
  | "claimed"
  /** What the binding's rows were charged (bindingBytes). */
  | "binding_bytes"
  /** The account's name as its CarryGrant gave it. */
  | "name"
  /** The pushes sent in the current minute (account-pushes.ts). */
  | "push_minute"
  | "push_count";
