// The operator's lists as the Worker reads them (the admin API writes them into the RelayPolicy
// object): what each list holds, and the checks requests go through.
export const POLICY_LISTS = ["banned_pubkeys", "allowed_pubkeys", "blocked_ips", "blocked_topics", "banned_accounts"] as const;
export type PolicyList = (typeof POLICY_LISTS)[number];

export interface PolicyEntry {
  /** A Tally key (64 lowercase hex), a client address as the relay sees it, a mailbox topic, or a Minca account's did. */
  value: string;
  reason: string;
}

export type PolicySnapshot = Record<PolicyList, PolicyEntry[]>;

/** The lists as sets, for the checks. */
export interface Policy {
  banned: ReadonlySet<string>;
  allowed: ReadonlySet<string>;
  blockedIps: ReadonlySet<string>;
  blockedTopics: ReadonlySet<string>;
  /** Minca accounts the host no longer carries for (docs/admin-api.md, edge.banaccount). */
  bannedAccounts: ReadonlySet<string>;
}

export function policyOf(s: PolicySnapshot): Policy {
  const set = (l: PolicyList) => new Set(s[l].map((e) => e.value));
  return {
    banned: set("banned_pubkeys"),
    allowed: set("allowed_pubkeys"),
    blockedIps: set("blocked_ips"),
    blockedTopics: set("blocked_topics"),
    bannedAccounts: set("banned_accounts"),
  };
}

export const EMPTY_POLICY: Policy = policyOf({
  banned_pubkeys: [],
  allowed_pubkeys: [],
  blocked_ips: [],
  blocked_topics: [],
  banned_accounts: [],
});

/**
 * Whether a Tally key (64 hex) may connect: not banned, and, once the allowlist holds any key
 * (allowlist mode), on it. Null when it may, else why not.
 */
export function tallyRefusal(p: Policy, hex: string): { code: "banned" | "not_allowed"; message: string } | null {
  if (p.banned.has(hex)) return { code: "banned", message: "this key is banned by the relay's operator" };
  if (p.allowed.size > 0 && !p.allowed.has(hex))
    return { code: "not_allowed", message: "this relay admits only the keys its operator allows" };
  return null;
}
