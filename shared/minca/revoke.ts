// Revokes' keys (the relay's hosting profile, "Revocations"): the record key a revoke of a did is
// written under, and whether a version revokes its own author (signing out), read from its outside.
import { keyHash } from "./id";

export const REVOKE = "sys.revoke";

/** The key of a revoke: revoke:<hex of the first 20 bytes of SHA-256(utf8(did))>. */
export function revokeKey(did: string): string {
  return `revoke:${keyHash(did)}`;
}

/**
 * A version that revokes its own author (signing out: any key may revoke itself, whatever its note
 * grants), read from its outside: collection sys.revoke, key revoke:<hash of the author>, not a
 * deletion. It only repeats what the key's revoke says, so a host takes it whenever it arrives.
 */
export function isSelfRevoke(v: { collection: string; key: string; author: string; deleted?: boolean }): boolean {
  return v.collection === REVOKE && v.deleted !== true && v.key === revokeKey(v.author);
}
