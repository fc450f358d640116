// What a carried space's append pipeline charges (docs/hosting.md, "Who pays", "Quotas"): step 3,
// each share of a request's bytes charged to the first of its candidate accounts with room (a
// share of revokes, deletions and carry:closed past the quota by the overdraft), the refunds of
// what was charged and not kept, and the space's own bounds. MincaSpace (minca-space.ts) runs it.
import { MINCA_HOST_LIMITS } from "../../shared/limits";
import { isRelief } from "../../shared/minca/carry";
import * as plans from "../../server/minca/append-plan";
import type { AppendPlan, FreshEntry, Share } from "../../server/minca/append-plan";
import { fail, type ObjectResult } from "../base/result";
import { accountOf } from "./peers";

/** Each share of the request's bytes, the account it was charged to, and whether that charged the account the space's database. */
type Charged = Array<{ account: string; share: Share; database: boolean }>;

/** What the quota step knows of the space. */
interface ChargedSpace {
  id: string;
  /** The account whose carry space this is, or null. */
  carryOf: string | null;
  carrying: string[];
}

/**
 * Step 3, quota: this space's bound (checked before), then the accounts'. Each share is charged
 * to the first of its candidates with room; an account at its quota is refused only its own
 * share. Each account checks and charges in one step; when a share finds no payer nothing of
 * the request is stored and what was charged is given back.
 */
export async function chargeShares(
  env: Env,
  here: ChargedSpace,
  plan: AppendPlan,
): Promise<{ ok: true; plan: AppendPlan; charged: Charged } | { ok: false; error: ObjectResult<never> }> {
  const shares = plans.sharesOf(plan, here.carrying, (v) => here.carryOf !== null && isRelief(v));
  const charged: Charged = [];
  for (const share of shares) {
    let payer: string | null = null;
    let database = false;
    let hostFull = false;
    for (const account of share.candidates) {
      const charge = await accountOf(env, account).reserve(here.id, share.versions, share.bytes, share.relief);
      if (charge === "ok" || charge === "first") {
        payer = account;
        database = charge === "first";
        break;
      }
      if (charge === "host_full") hostFull = true;
    }
    if (payer === null) {
      await refundAll(env, here.id, charged);
      // The host-wide total (docs/hosting.md, "Quotas"): no account has room because the host has none.
      if (hostFull)
        return {
          ok: false,
          error: fail(
            507,
            "storage_full",
            "this host holds all it may for the accounts it carries (storage.host_bytes): nothing was stored",
          ),
        };
      return {
        ok: false,
        error: fail(507, "quota_exceeded", `an account's carried spaces hold at most ${MINCA_HOST_LIMITS.max_account_bytes} bytes`),
      };
    }
    charged.push({ account: payer, share, database });
  }
  return {
    ok: true,
    plan: plans.withPayers(
      plan,
      shares,
      charged.map((c) => c.account),
    ),
    charged,
  };
}

/**
 * How many space databases the request charged and kept (storage.database_bytes_space): the shares
 * that were an account's first versions in the space and of which a version was stored. The
 * Worker charges them to the client's share of the host total.
 */
export function databasesKept(charged: Charged, plan: AppendPlan): number {
  return charged.filter((c) => c.database && c.share.indexes.some((i) => plan.entries[i].kind === "stored")).length;
}

/** Gives back what was charged and not kept. */
export async function refund(env: Env, space: string, refunds: Array<{ account: string; versions: number; bytes: number }>): Promise<void> {
  for (const r of refunds) if (r.versions > 0) await accountOf(env, r.account).refund(space, r.versions, r.bytes);
}

/** Gives back every charge: nothing of the request was stored. */
export function refundAll(env: Env, space: string, charged: Charged): Promise<void> {
  return refund(
    env,
    space,
    charged.map((c) => ({ account: c.account, versions: c.share.versions, bytes: c.share.bytes })),
  );
}

/**
 * Whether `add` would take a space holding `held` past its bounds. Revokes, deletions and
 * carry:closed in a carry space are never refused for storage: they may pass the bytes bound by
 * the overdraft, and the versions bound.
 */
export function overSpaceBound(held: { versions: number; bytes: number }, carryOf: string | null, add: FreshEntry[]): boolean {
  const eased = add.filter((f) => carryOf !== null && isRelief(f.version));
  const rest = add.filter((f) => !eased.includes(f));
  const bytes = (fs: FreshEntry[]) => fs.reduce((n, f) => n + f.bytes, 0);
  const { max_space_versions, max_space_bytes, relief_overdraft_bytes } = MINCA_HOST_LIMITS;
  if (held.versions + rest.length > max_space_versions || held.bytes + bytes(rest) > max_space_bytes) return true;
  return held.bytes + bytes(add) > max_space_bytes + relief_overdraft_bytes;
}

export function spaceFull(): ObjectResult<never> {
  return fail(
    507,
    "quota_exceeded",
    `a carried space holds at most ${MINCA_HOST_LIMITS.max_space_versions} versions and ${MINCA_HOST_LIMITS.max_space_bytes} bytes`,
  );
}
