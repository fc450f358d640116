// Carrier slots at a Minca host (the relay's hosting profile, "Carrier slots"): a space's
// carrying accounts are bounded. A member never loses its place to strangers who know a
// constitution: the founder's account (one of the constitution's founders) is never refused a
// slot, in any space, public ones included; nor is an account whose pass proves the space's read
// key — the constitution's own, or a later one a founder's account proves here. When the slots
// are full such a pass takes the slot of the most recently added stranger (none of these). Pure.
import { MINCA_HOST_LIMITS } from "../../shared/limits";
import type { Constitution } from "../../shared/minca/space";

export interface Carrier {
  account: string;
  /** The read key its pass proves (null: a public space's pass, or the constitution's). */
  readKey: string | null;
  /** The order it took its slot in (greater: later). */
  added: number;
}

type SlotDecision = { ok: true; evict: string | null } | { ok: false };

/**
 * The read keys that rank with the constitution's: its own, and every later one a founder's
 * account proves among `carriers` (a key anyone names counts only once a founder's account proves it).
 */
function memberReadKeys(carriers: readonly Carrier[], constitution: Constitution): Set<string> {
  const keys = new Set<string>();
  if (constitution.visibility !== "private") return keys;
  if (constitution.readKey !== undefined) keys.add(constitution.readKey);
  for (const c of carriers) if (c.readKey !== null && constitution.founders.includes(c.account)) keys.add(c.readKey);
  return keys;
}

/** Whether a carrier passing with `readKey` is a member (never refused a slot, never evicted). */
function ranks(account: string, readKey: string | null, constitution: Constitution, members: Set<string>): boolean {
  return constitution.founders.includes(account) || (readKey !== null && members.has(readKey));
}

/** Whether `account`, passing with `readKey`, gets a slot among `carriers`, and whose slot it takes. */
export function slotFor(
  carriers: readonly Carrier[],
  account: string,
  readKey: string | null,
  constitution: Constitution,
  max: number = MINCA_HOST_LIMITS.max_carriers_per_space,
): SlotDecision {
  if (carriers.some((c) => c.account === account) || carriers.length < max) return { ok: true, evict: null };
  const members = memberReadKeys(
    constitution.founders.includes(account) ? [...carriers, { account, readKey, added: Number.MAX_SAFE_INTEGER }] : carriers,
    constitution,
  );
  if (!ranks(account, readKey, constitution, members)) return { ok: false };
  const strangers = carriers.filter((c) => !ranks(c.account, c.readKey, constitution, members));
  if (strangers.length === 0) return { ok: true, evict: null }; // every carrier is a member: never refused
  const latest = strangers.reduce((a, b) => (b.added >= a.added ? b : a));
  return { ok: true, evict: latest.account };
}
