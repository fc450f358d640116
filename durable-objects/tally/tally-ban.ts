// The operator's ban of one Tally user (the admin API's banpubkey, docs/admin-api.md), kept in the
// user's own object: the Worker refuses a banned key's upgrades from its cached lists, but an
// isolate that has not seen the ban yet would let them through, and envelopes to the key come
// from other users' objects, which never ask the lists. So the object holds the mark and refuses
// by itself: a banned user's register (`banned`, 1008) and every envelope to it (not_stored).
import type { Meta } from "../base/meta";

const META_KEY = "banned_at";

export class BanMark {
  /** Read once per instance; only set() and clear() change it. */
  private cached: boolean | undefined;

  constructor(private readonly meta: Meta) {}

  /** Whether the operator banned this user (no schema: never banned). */
  get banned(): boolean {
    if (this.cached === undefined) {
      this.cached = this.meta.get(META_KEY) !== null;
    }
    return this.cached;
  }

  /** The operator banned this user: kept until clear(). */
  set(now: number): void {
    this.meta.set(META_KEY, String(now));
    this.cached = true;
  }

  /** The operator lifted the ban. */
  clear(): void {
    if (this.banned) this.meta.delete(META_KEY);
    this.cached = false;
  }
}
