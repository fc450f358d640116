// A ledger entry and the signed inner message it was made from (the Tally protocol sections 3 and 12.6),
// both ways, exactly. An entry is the inner message with `created_at` renamed `originated_at` and
// `timestamp` the time this client appended it. The Tally protocol requires unknown fields to survive
// storing and forwarding (3), so the mapping must be reversible for every inner message:
//
// Decision: when the inner message has fields of its own named `originated_at`, `timestamp` or
// `inner_fields`, or has no string `created_at`, the entry carries `inner_fields`:
//   { values?: { <name>: <the inner's own value> }, absent?: ["created_at"] }
// `values` restores the inner's own values of those names (and of a non-string created_at);
// `absent: ["created_at"]` says the inner had no created_at (the entry's originated_at is then
// the time it was appended). An ordinary inner message maps to the Tally protocol's entry shape exactly,
// with no `inner_fields`.
import * as z from "zod";

/** A ledger entry (12.6). */
export interface LedgerEntry {
  id: string;
  type: string;
  from_user_id: string;
  to_user_id: string;
  originated_at: string;
  timestamp: string;
  payload?: unknown;
  [k: string]: unknown;
}

/** The entry field that carries what the plain renaming would lose. */
const INNER_FIELDS = "inner_fields";
/** Names an entry gives a meaning of its own; an inner message's own fields by these names go to inner_fields. */
const ENTRY_OWNED = ["originated_at", "timestamp", INNER_FIELDS] as const;

const innerFieldsSchema = z.object({
  values: z.record(z.string(), z.unknown()).optional(),
  absent: z.array(z.literal("created_at")).optional(),
});

/** The entry for a signed inner message, appended at `appendedAt`. */
export function innerToLedgerEntry(inner: Record<string, unknown>, appendedAt: Date): LedgerEntry {
  const at = appendedAt.toISOString();
  const { created_at, ...rest } = inner;
  const values: Record<string, unknown> = {};
  for (const name of ENTRY_OWNED) {
    if (Object.hasOwn(rest, name)) {
      values[name] = rest[name];
      delete rest[name];
    }
  }
  const absent = created_at === undefined && !Object.hasOwn(inner, "created_at");
  let originated = at;
  if (typeof created_at === "string") originated = created_at;
  else if (!absent) values.created_at = created_at;
  const entry: Record<string, unknown> = { ...rest, originated_at: originated, timestamp: at };
  if (Object.keys(values).length > 0 || absent) {
    const fields: Record<string, unknown> = {};
    if (Object.keys(values).length > 0) fields.values = values;
    if (absent) fields.absent = ["created_at"];
    entry[INNER_FIELDS] = fields;
  }
  return entry as LedgerEntry;
}

/**
 * The inner message a ledger entry was signed as: created_at := originated_at, timestamp dropped,
 * and whatever inner_fields restores. Throws on a malformed inner_fields.
 */
export function ledgerEntryToInner(entry: Record<string, unknown>): Record<string, unknown> {
  const { originated_at, timestamp: _timestamp, [INNER_FIELDS]: rawFields, ...rest } = entry;
  const fields = rawFields === undefined ? {} : innerFieldsSchema.parse(rawFields);
  const inner: Record<string, unknown> = { ...rest };
  if (!fields.absent?.includes("created_at")) inner.created_at = originated_at;
  for (const [k, v] of Object.entries(fields.values ?? {})) inner[k] = v;
  return inner;
}

/** The key an entry (or a processed message) is known by: its author and its id (3.1, 7). */
export function ledgerKey(e: { from_user_id: string; id: string }): string {
  return `${e.from_user_id} ${e.id}`;
}
