// Routes of the Minca host (docs/hosting.md): CORS, input checks with shared/minca, and the call to
// the account's or the space's Durable Object. No state and no protocol decisions here.
import { Hono } from "hono";
import { cors } from "hono/cors";
import { hostIdentity } from "../server/relay-objects";
import { objectOf } from "../server/objects";
import { heldWait } from "../server/live";
import { parseClientJson } from "../shared/client-json";
import { formatIssue } from "../shared/errors";
import { MINCA_HOST_LIMITS, STORAGE_LIMITS } from "../shared/limits";
import { admit } from "../server/minca/admission";
import { checkCarryGrant } from "../shared/minca/carry";
import { isP256DidKey } from "../shared/minca/did-key";
import { claimedRoots, logQuerySchema, readVersionsBody } from "../server/minca/host-wire";
import { isMincaId } from "../shared/minca/id";
import { TIME_HEADER } from "../shared/minca/read-proof";
import { ClientBuckets } from "../shared/rate-limit";
import { rowBytes } from "../shared/storage";
import { reserveShare, settleShare } from "./client-limits";
import { currentPolicy } from "./policy";
import { answer, clientLimited, httpError, methodNotAllowed, NO_STORE, readBody, type C, type RelayHono } from "./http";

/** Mounted at MINCA_PATH: the host's endpoints (`/host/...`) and the carried spaces' (`/spaces/...`). */
export const MINCA_PATH = "/minca/v1";

const account = (c: C, did: string) => objectOf(c.env, "MINCA_ACCOUNT", did);
const space = (c: C, id: string) => objectOf(c.env, "MINCA_SPACE", id);
const readProof = (c: C) => ({ authorization: c.req.header("authorization") ?? null, time: c.req.header(TIME_HEADER) ?? null });

export const hostingRoutes = new Hono<RelayHono>();

/**
 * Per-client buckets of the account endpoints, across every account (docs/hosting.md, "Rates"):
 * each account is its own object, so a bucket per object would never throttle a client that
 * makes up new dids. Held in this isolate's memory (self-hosted: the whole relay; on Cloudflare,
 * per isolate), checked before the body is read or any object is reached. Not in shared mode
 * (no trusted client address): one bucket for everyone would let one client lock every account
 * out of connecting; what a grant stores is charged to the host's total either way.
 */
const accountRates = new ClientBuckets<"grant" | "read">({
  grant: { burst: MINCA_HOST_LIMITS.grants_burst, perSecond: MINCA_HOST_LIMITS.grants_per_second },
  read: { burst: MINCA_HOST_LIMITS.account_reads_burst, perSecond: MINCA_HOST_LIMITS.account_reads_per_second },
});

function limited(c: C, kind: "grant" | "read"): Response | null {
  const what =
    kind === "grant" ? `${MINCA_HOST_LIMITS.grants_per_second} CarryGrant` : `${MINCA_HOST_LIMITS.account_reads_per_second} account reads`;
  return clientLimited(
    c,
    (client) => (accountRates.take(kind, client) ?? 0) * 1000,
    `too many requests from this client (about ${what} a second); retry later`,
  );
}

for (const path of ["/host/*", "/spaces/*"]) {
  hostingRoutes.use(
    path,
    cors({
      origin: "*",
      allowMethods: ["GET", "POST", "OPTIONS"],
      allowHeaders: ["Content-Type", "Authorization", TIME_HEADER],
      exposeHeaders: ["Retry-After"],
      maxAge: 86_400,
    }),
  );
}

/** Whether any of `accounts` is banned by the operator (docs/admin-api.md, edge.banaccount). */
async function accountBanned(c: C, accounts: string[]): Promise<boolean> {
  if (accounts.length === 0) return false;
  const { bannedAccounts } = await currentPolicy(c.env);
  return bannedAccounts.size > 0 && accounts.some((a) => bannedAccounts.has(a));
}

const banned = (c: C) =>
  httpError(c, 403, "banned", "this Minca account is banned by the relay's operator: the host carries nothing for it");

hostingRoutes.post("/host/accounts", async (c) => {
  const slow = limited(c, "grant");
  if (slow) return slow;
  const host = await hostIdentity(c.env, c.var.settings);
  const grant = await readBody(c, {
    max: MINCA_HOST_LIMITS.max_grant_bytes,
    tooLarge: `a CarryGrant is at most ${MINCA_HOST_LIMITS.max_grant_bytes} bytes`,
    code: "invalid_grant",
    parse: (text) => {
      const json = parseClientJson(text);
      if (!json.ok) return { ok: false, reason: `the body must be a CarryGrant's JSON: ${json.reason}` };
      const checked = checkCarryGrant(json.value, host.did);
      return checked.ok ? { ok: true, value: checked.start } : checked;
    },
  });
  if (!grant.ok) return grant.answer;
  if (await accountBanned(c, [grant.value.account])) return banned(c);
  // Admission (the operator's MINCA_HOST_ADMISSION) before anything is stored.
  const admitted = admit(c.var.settings.admission, grant.value.account, c.req.header("authorization") ?? null);
  if (!admitted.ok) return httpError(c, admitted.status, admitted.code, admitted.message);
  return answer(c, await account(c, grant.value.account).startCarrying(grant.value), (v) =>
    c.json(v as object, 201, { "Cache-Control": "no-store" }),
  );
});

hostingRoutes.get("/host/accounts/:did", async (c) => {
  const did = c.req.param("did");
  if (!isP256DidKey(did)) return httpError(c, 400, "bad_request", "the path must end in the account's P-256 did:key");
  const slow = limited(c, "read");
  if (slow) return slow;
  if (await accountBanned(c, [did])) return banned(c);
  return answer(c, await account(c, did).status(readProof(c)));
});

hostingRoutes.use("/spaces/:id/*", async (c, next) => {
  if (!isMincaId(c.req.param("id"))) return httpError(c, 400, "bad_request", "a space id matches ^b[a-z2-7]{52}$");
  await next();
});

hostingRoutes.post("/spaces/:id/versions", async (c) => {
  const id = c.req.param("id");
  const versions = await readBody(c, {
    max: MINCA_HOST_LIMITS.max_request_bytes,
    tooLarge: `a request is at most ${MINCA_HOST_LIMITS.max_request_bytes} bytes`,
    code: "invalid_versions",
    parse: (text) => {
      const read = readVersionsBody(text);
      return read.ok ? { ok: true, value: read.versions } : read;
    },
  });
  if (!versions.ok) return versions.answer;
  if (await accountBanned(c, claimedRoots(versions.value))) return banned(c);
  // The client's share of the host's total (storage.client_share): reserved for the whole request
  // and the space databases it may charge (storage.database_bytes_space: an account's first
  // versions in a space; at most one per paying account, so per root claimed and one for the
  // versions of other roots, and at most one per version), charged for the versions the space
  // accepted and the databases it charged (the rest given back), as the account and the host total are.
  const databasesAtMost = Math.min(versions.value.length, new Set(claimedRoots(versions.value)).size + 1);
  const reserved = versionsCost(versions.value) + databasesAtMost * STORAGE_LIMITS.database_bytes_space;
  const over = reserveShare(c, "host", reserved);
  if (over) return over;
  // The host a sys.receiver's endpoint must not name (the push endpoint rule), besides PUBLIC_URL's.
  const requestHost = new URL(c.req.url).host;
  const appended = await space(c, id).append(versions.value, { requestHost, client: c.var.client });
  const charged = appended.ok
    ? versionsCost(versions.value.filter((_, i) => appended.value.results[i]?.accepted)) +
      appended.value.databases * STORAGE_LIMITS.database_bytes_space
    : 0;
  settleShare(c, "host", reserved, charged);
  return answer(c, appended, ({ results }) => c.json({ results }, 200, NO_STORE));
});

/** What storing `versions` charges a client's share: a row each, of its bytes as they arrived. */
const versionsCost = (versions: Array<{ bytes: number }>) => versions.reduce((n, v) => n + rowBytes(v.bytes), 0);

hostingRoutes.get("/spaces/:id/versions", async (c) => {
  const id = c.req.param("id");
  const q = logQuerySchema.safeParse(c.req.query());
  if (!q.success) return httpError(c, 400, "invalid_query", formatIssue(q.error));
  // The object answers with the page's JSON text: the versions in it as they arrived, not parsed and serialised again.
  return answer(c, await space(c, id).page({ ...q.data, wait: heldWait(q.data.wait) }, readProof(c), c.var.client), (text) =>
    c.body(text, 200, { ...NO_STORE, "Content-Type": "application/json" }),
  );
});

hostingRoutes.all("/host/accounts", (c) => methodNotAllowed(c, ["POST"]));
hostingRoutes.all("/host/accounts/:did", (c) => methodNotAllowed(c, ["GET"]));
hostingRoutes.all("/spaces/:id/versions", (c) => methodNotAllowed(c, ["GET", "POST"]));
