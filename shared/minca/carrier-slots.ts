// Carrier slots at a Minca host (the relay's hosting profile, "Carrier slots"): a space's
// carrying accounts are bounded, and when the slots are full a pass proven with the
// constitution's own read key (a member holding the space key) takes the slot of the most
// recently added carrier whose pass is not; such a member is never refused a slot. Pure.
import { MINCA_HOST_LIMITS } from "../limits";
import type { Constitution } from "./space";

export interface Carrier {
  account: string;
  /** The read key its pass proves (null: a public space's pass, or the constitution's). */
  readKey: string | null;
  /** The order it took its slot in (greater: later). */
  added: number;
}

export type SlotDecision = { ok: true; evict: string | null } | { ok: false };

/** Whether `account`, passing with `readKey`, gets a slot among `carriers`, and whose slot it takes. */
export function slotFor(
  carriers: readonly Carrier[],
  account: string,
  readKey: string | null,
  constitution: Constitution,
  max: number = MINCA_HOST_LIMITS.max_carriers_per_space,
): SlotDecision {
  if (carriers.some((c) => c.account === account) || carriers.length < max) return { ok: true, evict: null };
  const member = constitution.visibility === "private" && constitution.readKey !== undefined && readKey === constitution.readKey;
  if (!member) return { ok: false };
  const strangers = carriers.filter((c) => c.readKey !== constitution.readKey);
  if (strangers.length === 0) return { ok: true, evict: null }; // every carrier is a member: never refused
  const latest = strangers.reduce((a, b) => (b.added >= a.added ? b : a));
  return { ok: true, evict: latest.account };
}
