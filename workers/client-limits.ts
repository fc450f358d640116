// The Worker's per-client limits across every name (docs/hostile.md, "Shares of a total" and
// "Requests that start objects"), held in this isolate's memory (self-hosted: the whole relay; on
// Cloudflare, per isolate) and keyed by the client address. Per-name limits live in the objects;
// these bound what a client that makes up new names can do:
// - each client's share of the mailbox and host totals: a byte budget refilled over the share
//   period, checked before a store reaches its object and charged for what the object stored;
// - one bucket of requests addressed to named objects (topics, spaces, accounts, upgrades).
// None applies in shared mode (clientLimited()).
import type { MiddlewareHandler } from "hono";
import { COMMON_LIMITS, STORAGE_LIMITS } from "../shared/limits";
import { ClientShares } from "../shared/rate-limit";
import { newNameWaitMs } from "../server/name-requests";
import { shareCapacity } from "../shared/storage";
import { clientLimited, isAdminRoute, type C, type RelayHono } from "./http";
import { SHARED_CLIENT } from "./client-address";

type SharedKind = "mailbox" | "host";

const shares = new ClientShares<SharedKind>(STORAGE_LIMITS.share_period_seconds * 1000, STORAGE_LIMITS.client_shares_remembered);

const capacity = (c: C, kind: SharedKind) => shareCapacity(c.var.settings.storage[kind], STORAGE_LIMITS.client_share);

/**
 * Reserves `cost` bytes of `kind` from the client's share of that total before the store: 429
 * when they would take it past its share (nothing reserved), null when reserved. Reserved at the
 * check, so concurrent requests of one client never pass its share together; settleShare() gives
 * back what was not stored.
 */
export function reserveShare(c: C, kind: SharedKind, cost: number): Response | null {
  return clientLimited(
    c,
    (client) => shares.reserve(kind, client, capacity(c, kind), cost),
    `this client stored its share of the relay's ${kind} total (storage.client_share of it within storage.share_period_seconds); retry later`,
  );
}

/** The store answered: of the `reserved` bytes, `charged` were stored; the rest goes back to the client's share. */
export function settleShare(c: C, kind: SharedKind, reserved: number, charged: number): void {
  if (c.var.client !== SHARED_CLIENT) shares.refund(kind, c.var.client, capacity(c, kind), reserved - Math.min(reserved, charged));
}

/**
 * Every request addressed to a named object takes a token of its client's bucket across all names
 * (common.client_object_requests_*): a client asking for a few hundred made-up names a second is
 * answered 429 before any object starts. CORS preflights and the admin API's routes do not count.
 */
export const objectRequestLimit: MiddlewareHandler<RelayHono> = async (c, next) => {
  if (c.req.method !== "OPTIONS" && !isAdminRoute(c.req.raw)) {
    const slow = clientLimited(
      c,
      (client) => newNameWaitMs(client),
      `too many requests to named objects from this client (about ${COMMON_LIMITS.client_object_requests_per_second} a second); retry later`,
    );
    if (slow) return slow;
  }
  await next();
};

/** The paths whose requests name an object (mounted before the routers). */
export const OBJECT_PATHS = [
  "/minca/v1/mailbox/*",
  "/minca/v1/spaces/*",
  "/minca/v1/host/accounts",
  "/minca/v1/host/accounts/*",
  "/minca/v1/rooms/*",
  "/tally/v1/*",
  "/passnote/v2/*",
] as const;
