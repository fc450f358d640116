// Binding an account to a host (docs/hosting.md): a CarryGrant is unsigned, so posting one proves
// nothing. A binding is proven only once a version under the account's /account/write authority
// arrives in its carry space (the carry space's gates take nothing else); until then another
// CarryGrant may replace it, and it expires unproven_binding_seconds after it was made. What the
// host holds for an account is answered only to a request proven with the carry space's read key
// (the MincaRead headers of docs/hosting.md over the carry space's id). Pure decisions.
import { MINCA_HOST_LIMITS } from "../../shared/limits";
import { rowBytes } from "../../shared/storage";
import type { CarryStart } from "../../shared/minca/carry";
import { checkReadProof, type ReadProofCheck } from "../../shared/minca/read-proof";

interface Binding {
  /** When the binding was made (ms). */
  boundAt: number;
  /** Whether a version under the account's /account/write authority arrived in the carry space. */
  proven: boolean;
}

/** When an unproven binding expires (ms), or null once proven. */
export function bindingExpiry(b: Binding): number | null {
  return b.proven ? null : b.boundAt + MINCA_HOST_LIMITS.unproven_binding_seconds * 1000;
}

/** Whether a binding still holds at `now` (ms): proven, or unproven and not yet expired. */
export function bindingHolds(b: Binding, now: number): boolean {
  const expiry = bindingExpiry(b);
  return expiry === null || now < expiry;
}

/**
 * Who may read an account's status: a request proven with the read key of its carry space
 * (`carry`: the space's id and read key did), or of the closed one (its tombstone). Missing
 * proof: 401. A proof for an account the host does not know (carry null) is invalid (403), as a
 * wrong one is: nothing tells whether the host carries for that did.
 */
export function checkStatusProof(
  headers: { authorization: string | null; time: string | null },
  carry: { space: string; readKey: string } | null,
  nowSeconds: number,
): ReadProofCheck {
  if (!headers.authorization) return "missing";
  if (carry === null) return "invalid";
  return checkReadProof(headers, carry.space, [carry.readKey], nowSeconds);
}

/**
 * What a binding stores, as the host-wide total counts it (every row charged its overhead plus
 * its bytes): the account object's rows (its did, carry space, carry key, when it was bound, its
 * name, this charge) and the carry space object's (its id, constitution and account). Charged
 * before either is written, unproven bindings included, so a grant keeps nothing uncounted.
 */
export function bindingBytes(start: CarryStart): number {
  const account = [start.account.length, start.carrySpace.length, Math.ceil((start.key.length * 4) / 3), 16, start.name?.length ?? 0, 16];
  const space = [start.carrySpace.length, JSON.stringify(start.constitution).length, start.account.length];
  return [...account, ...space].reduce((n, b) => n + rowBytes(b), 0);
}
