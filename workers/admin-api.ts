// The admin API (docs/admin-api.md): NIP-86 JSON-RPC over HTTP. `POST /` or `POST /tally/v1/<npub>`
// with Content-Type: application/nostr+json+rpc and `{ "method", "params": [...] }`, answered
// `{ "result" }` or `{ "error" }`. Authorized by `Authorization: Bearer <ADMIN_TOKEN>` or by a
// NIP-98 event signed by a key in ADMIN_PUBKEYS; else 401 (logged, counted, throttled per address).
// The lists live in the RelayPolicy object; every call is one log line and a counter.
import { Hono } from "hono";
import * as z from "zod";
import { countAdminAction } from "../server/counters";
import type { PolicyList } from "../server/policy";
import { relayLedger, relayPolicy } from "../server/relay-objects";
import { objectAt, objectOf } from "../server/objects";
import { utf8Decode } from "../shared/encoding";
import { formatIssue } from "../shared/errors";
import { ADMIN_LIMITS } from "../shared/limits";
import { log } from "../server/log";
import { isTopic } from "../shared/mailbox/topic";
import { isP256DidKey } from "../shared/minca/did-key";
import { checkNip98 } from "../server/nostr/nip98";
import { RecentMap } from "../shared/recent-map";
import { isNpub, npubDecode } from "../shared/tally/keys";
import { tokenMatches } from "../server/stats";
import { readBounded } from "./body";
import { normalizeAddress } from "./client-address";
import { ADMIN_RPC_TYPE, authFailed, httpError, isAdminRpc, type C, type RelayHono } from "./http";
import { operatorThrottle, throttled } from "./operator";
import { forgetPolicy } from "./policy";
import { liveObjects } from "../server/live";
import type { SocketBinding } from "./sockets";

const requestSchema = z.object({ method: z.string().max(64), params: z.array(z.unknown()).max(8).default([]) });

type Answer = { result: unknown } | { error: string };
type Method = (c: C, params: unknown[]) => Promise<Answer>;

/** A Tally key as hex, from hex or npub; null when it is neither. */
function pubkeyParam(v: unknown): string | null {
  if (typeof v !== "string") return null;
  if (/^[0-9a-fA-F]{64}$/.test(v)) return v.toLowerCase();
  return isNpub(v) ? npubDecode(v) : null;
}

function reasonParam(v: unknown): string {
  return typeof v === "string" ? v.slice(0, 200) : "";
}

/** ban/allow/block: add `value` (checked by `read`) to `list`, then `after`. */
function adder(
  list: PolicyList,
  what: string,
  read: (v: unknown) => string | null,
  after?: (c: C, value: string) => Promise<unknown>,
): Method {
  return async (c, [v, reason]) => {
    const value = read(v);
    if (value === null) return { error: `params[0] must be ${what}` };
    if (!(await relayPolicy(c.env).add(list, value, reasonParam(reason))))
      return { error: `the list is full (admin.max_list_entries = ${ADMIN_LIMITS.max_list_entries})` };
    forgetPolicy();
    if (after) await after(c, value);
    return { result: true };
  };
}

/** unban/unallow/unblock: remove `value` (checked by `read`) from `list`, then `after`. */
function remover(
  list: PolicyList,
  what: string,
  read: (v: unknown) => string | null,
  after?: (c: C, value: string) => Promise<unknown>,
): Method {
  return async (c, [v]) => {
    const value = read(v);
    if (value === null) return { error: `params[0] must be ${what}` };
    await relayPolicy(c.env).remove(list, value);
    forgetPolicy();
    if (after) await after(c, value);
    return { result: true };
  };
}

function lister(list: PolicyList, field: string): Method {
  return async (c) => ({ result: (await relayPolicy(c.env).snapshot())[list].map((e) => ({ [field]: e.value, reason: e.reason })) });
}

const PUBKEY = "a Tally key: npub or 64 hex characters";
const ADDRESS = "an IP address (IPv6 counts by its /64)";
const TOPIC = "a mailbox topic";
const ACCOUNT = "a Minca account: its P-256 did:key";
const accountDid = (v: unknown) => (typeof v === "string" && isP256DidKey(v) ? v : null);
/** An address as blockip takes it, or as listblockedips prints it: an IPv6 address's /64 ("2001:db8:1:2::/64") too. */
const address = (v: unknown) =>
  typeof v === "string" ? normalizeAddress(v.trim().replace(/^([0-9a-fA-F:]*:[0-9a-fA-F:]*)\/64$/, "$1")) : null;
const topic = (v: unknown) => (typeof v === "string" && isTopic(v) ? v : null);

/**
 * A banned key's object keeps the ban itself (its register refused, envelopes to it not stored,
 * in every isolate), closes its sockets and drops its stored envelopes (TallyUser.ban).
 */
async function banUser(c: C, hex: string): Promise<void> {
  const purged = await objectOf(c.env, "TALLY_USER", hex).ban();
  log.info("admin: banned key purged", { envelopes: purged.received, sent_envelopes: purged.sent });
}

/**
 * A blocked address's open sockets are closed (1008): every object holding sockets is asked
 * (self-hosted, where the Worker notes them: server/live.ts). On Cloudflare the objects are not
 * noted; the block holds for every new request and upgrade from the address at once.
 */
async function closeBlocked(c: C, address: string): Promise<void> {
  const refs = liveObjects();
  const closed = await Promise.allSettled(
    refs.map(({ id, binding }) => {
      const b = binding as SocketBinding;
      return objectAt(c.env, b, c.env[b].idFromString(id)).closeClient(address);
    }),
  );
  const sockets = closed.reduce((n, r) => n + (r.status === "fulfilled" ? r.value : 0), 0);
  log.info("admin: a blocked address's sockets closed", { sockets });
}

/** The key's object forgets the ban (TallyUser.unban). */
async function unbanUser(c: C, hex: string): Promise<void> {
  await objectOf(c.env, "TALLY_USER", hex).unban();
}

/** A banned Minca account's carried data goes: every space it carries, its carry space, its links, its lease (MincaAccount.purge). */
async function purgeAccount(c: C, did: string): Promise<void> {
  const purged = await objectOf(c.env, "MINCA_ACCOUNT", did).purge();
  log.info("admin: banned account purged", { spaces: purged.spaces, links: purged.links });
}

export const METHODS: Record<string, Method> = {
  supportedmethods: async () => ({ result: Object.keys(METHODS) }),
  banpubkey: adder("banned_pubkeys", PUBKEY, pubkeyParam, banUser),
  unbanpubkey: remover("banned_pubkeys", PUBKEY, pubkeyParam, unbanUser),
  listbannedpubkeys: lister("banned_pubkeys", "pubkey"),
  allowpubkey: adder("allowed_pubkeys", PUBKEY, pubkeyParam),
  unallowpubkey: remover("allowed_pubkeys", PUBKEY, pubkeyParam),
  listallowedpubkeys: lister("allowed_pubkeys", "pubkey"),
  blockip: adder("blocked_ips", ADDRESS, address, closeBlocked),
  unblockip: remover("blocked_ips", ADDRESS, address),
  listblockedips: lister("blocked_ips", "ip"),
  "edge.blocktopic": adder("blocked_topics", TOPIC, topic),
  "edge.unblocktopic": remover("blocked_topics", TOPIC, topic),
  "edge.listblockedtopics": lister("blocked_topics", "topic"),
  "edge.purgetopic": async (c, [v]) => {
    const t = topic(v);
    if (t === null) return { error: `params[0] must be ${TOPIC}` };
    const purged = await objectOf(c.env, "MINCA_MAILBOX", t).purge();
    return { result: { purged } };
  },
  "edge.banaccount": adder("banned_accounts", ACCOUNT, accountDid, purgeAccount),
  "edge.unbanaccount": remover("banned_accounts", ACCOUNT, accountDid),
  "edge.listbannedaccounts": lister("banned_accounts", "account"),
  "edge.liststorageholders": async (c, [limit]) => ({ result: await relayLedger(c.env).largest(typeof limit === "number" ? limit : 10) }),
};

/**
 * NIP-98 events accepted (their signature to created_at), so each is accepted once: an event outside the skew
 * window is refused anyway, and admin.nip98_events_remembered covers the window at any rate an
 * operator calls (an event is remembered only once it passed every check, the admin key's included).
 */
const usedEvents = new RecentMap<string, number>(ADMIN_LIMITS.nip98_events_remembered);

/**
 * Who calls: "token", or the admin key (hex); else the 401. A valid credential is let in before the
 * throttle, which holds back only wrong ones (so wrong tries from anyone, in shared mode everyone
 * is one client, never lock the operator out); a wrong one past the throttle is 429.
 */
function authorize(c: C, body: Uint8Array): { ok: true; by: string } | { ok: false; answer: Response } {
  const s = c.var.settings;
  const header = c.req.header("authorization");
  const challenge = 'Nostr, Bearer realm="relay admin"';
  const fail = (reason: string, counted: boolean) => {
    const slow = throttled(c);
    if (slow) return { ok: false as const, answer: slow };
    if (counted) operatorThrottle.fail(c.var.client);
    return {
      ok: false as const,
      answer: authFailed(
        c,
        challenge,
        `the admin API needs Authorization: Bearer <ADMIN_TOKEN> or a NIP-98 event signed by a key in ADMIN_PUBKEYS (${reason})`,
        reason,
      ),
    };
  };
  if (!header) return fail("no credentials", false);
  if (/^Bearer\s/i.test(header)) {
    if (s.adminToken && tokenMatches(header, s.adminToken)) return { ok: true, by: "token" };
    return fail(s.adminToken ? "wrong token" : "no ADMIN_TOKEN is set", true);
  }
  // The u tag must name this relay as PUBLIC_URL says: without it, NIP-98 is not accepted (the
  // Host header is the client's to choose).
  if (s.publicUrls.length === 0) return fail("NIP-98 needs PUBLIC_URL set (the URL the event must name); use the token", true);
  const checked = checkNip98(header, {
    url: c.req.url,
    method: "POST",
    body,
    hosts: s.publicUrls.map((u) => u.host),
    nowSeconds: Math.floor(Date.now() / 1000),
    maxSkewSeconds: ADMIN_LIMITS.nip98_max_skew_seconds,
  });
  if (!checked.ok) return fail(checked.reason, true);
  if (!s.adminPubkeys.includes(checked.pubkey)) return fail("the key is not in ADMIN_PUBKEYS", true);
  // Each event once: a captured header cannot be sent again within the window.
  // Keyed by the signature, not the id: the same call made twice within a second is the same id,
  // signed afresh (BIP-340 signing draws fresh randomness); a captured header is the same signature.
  if (usedEvents.get(checked.sig) !== undefined) return fail("this signed event was used already", true);
  usedEvents.set(checked.sig, checked.createdAt);
  return { ok: true, by: checked.pubkey };
}

async function rpc(c: C): Promise<Response> {
  if (!isAdminRpc(c.req.raw)) return httpError(c, 415, "bad_request", `the admin API takes Content-Type: ${ADMIN_RPC_TYPE}`);
  const body = await readBounded(c.req.raw, ADMIN_LIMITS.max_rpc_body_bytes);
  if (body === null) return httpError(c, 413, "too_large", `an admin request is at most ${ADMIN_LIMITS.max_rpc_body_bytes} bytes`);
  const who = authorize(c, body);
  if (!who.ok) return who.answer;
  let parsed: z.infer<typeof requestSchema>;
  try {
    const r = requestSchema.safeParse(JSON.parse(utf8Decode(body)));
    if (!r.success) return c.json({ error: `the body must be { "method", "params": [...] }: ${formatIssue(r.error)}` }, 400);
    parsed = r.data;
  } catch {
    return c.json({ error: "the body is not JSON" }, 400);
  }
  const method = Object.hasOwn(METHODS, parsed.method) ? METHODS[parsed.method] : undefined;
  const answer: Answer = method
    ? await method(c, parsed.params)
    : { error: `unknown method ${parsed.method}; supportedmethods lists them` };
  const outcome = "error" in answer ? "error" : "ok";
  const name = method ? parsed.method : "unknown";
  countAdminAction(name, outcome);
  log.info("admin action", { method: name, by: who.by, outcome, ...("error" in answer ? { error: answer.error } : {}) });
  c.header("Cache-Control", "no-store");
  return c.json(answer);
}

export const adminRoutes = new Hono<RelayHono>();
adminRoutes.post("/", rpc);
adminRoutes.post("/tally/v1/:npub", rpc);
