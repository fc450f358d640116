// Routes of the Minca host (DESIGN section 8): CORS, input checks with shared/minca, and the call
// to the account's or the space's Durable Object. No state and no protocol decisions here.
import type { Context, Hono } from "hono";
import { cors } from "hono/cors";
import type { HostResult } from "../durable-objects/minca-host/result";
import { hostIdentity } from "../durable-objects/relay/relay-keys";
import { parseClientJson } from "../shared/client-json";
import { utf8Decode } from "../shared/encoding";
import { MINCA_HOST_LIMITS } from "../shared/limits";
import { admissionOf, admit } from "../shared/minca/admission";
import { checkCarryGrant } from "../shared/minca/carry";
import { isP256DidKey } from "../shared/minca/did-key";
import { logQuerySchema, readVersionsBody } from "../shared/minca/host-wire";
import { isMincaId } from "../shared/minca/id";
import { TIME_HEADER } from "../shared/minca/read-proof";
import { httpError, methodNotAllowed } from "./app";
import { clientAddress } from "./client-address";
import { firstIssue } from "./mailbox";
import { readBounded } from "./body";

type C = Context<{ Bindings: Env }>;

export const HOST_PATH = "/minca/v1/host";
export const SPACES_PATH = "/minca/v1/spaces";
const noStore = { "Cache-Control": "no-store" };

function answer<T>(c: C, r: HostResult<T>, status = 200): Response {
  if (!r.ok) {
    if (r.retryAfterSeconds !== undefined) c.header("Retry-After", String(r.retryAfterSeconds));
    return httpError(c, r.status, r.code, r.message);
  }
  return c.json(r.value as object, status as 200, noStore);
}

const account = (c: C, did: string) => c.env.MINCA_ACCOUNT.get(c.env.MINCA_ACCOUNT.idFromName(did));
const space = (c: C, id: string) => c.env.MINCA_SPACE.get(c.env.MINCA_SPACE.idFromName(id));

export function mountHosting(app: Hono<{ Bindings: Env }>): void {
  for (const path of [`${HOST_PATH}/*`, `${SPACES_PATH}/*`]) {
    app.use(
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

  app.post(`${HOST_PATH}/accounts`, async (c) => {
    const body = await readBounded(c.req.raw, MINCA_HOST_LIMITS.max_grant_bytes);
    if (body === null) return httpError(c, 413, "too_large", `a CarryGrant is at most ${MINCA_HOST_LIMITS.max_grant_bytes} bytes`);
    let text: string;
    try {
      text = utf8Decode(body);
    } catch {
      return httpError(c, 400, "invalid_grant", "the body is not UTF-8");
    }
    const json = parseClientJson(text);
    if (!json.ok) return httpError(c, 400, "invalid_grant", `the body must be a CarryGrant's JSON: ${json.reason}`);
    const host = await hostIdentity(c.env);
    const checked = checkCarryGrant(json.value, host.did);
    if (!checked.ok) return httpError(c, 400, "invalid_grant", checked.reason);
    // Admission (the operator's MINCA_HOST_ADMISSION) before anything is stored.
    const admitted = admit(admissionOf(c.env), checked.start.account, c.req.header("authorization") ?? null);
    if (!admitted.ok) return httpError(c, admitted.status, admitted.code, admitted.message);
    return answer(c, await account(c, checked.start.account).startCarrying(checked.start), 201);
  });

  app.get(`${HOST_PATH}/accounts/:did`, async (c) => {
    const did = c.req.param("did");
    if (!isP256DidKey(did)) return httpError(c, 400, "bad_request", "the path must end in the account's P-256 did:key");
    const proof = { authorization: c.req.header("authorization") ?? null, time: c.req.header(TIME_HEADER) ?? null };
    return answer(c, await account(c, did).status(proof));
  });

  app.use(`${SPACES_PATH}/:id/*`, async (c, next) => {
    if (!isMincaId(c.req.param("id"))) return httpError(c, 400, "bad_request", "a space id matches ^b[a-z2-7]{52}$");
    await next();
  });

  app.post(`${SPACES_PATH}/:id/versions`, async (c) => {
    const id = c.req.param("id");
    const body = await readBounded(c.req.raw, MINCA_HOST_LIMITS.max_request_bytes);
    if (body === null) return httpError(c, 413, "too_large", `a request is at most ${MINCA_HOST_LIMITS.max_request_bytes} bytes`);
    let text: string;
    try {
      text = utf8Decode(body);
    } catch {
      return httpError(c, 400, "invalid_versions", "the body is not UTF-8");
    }
    const read = readVersionsBody(text);
    if (!read.ok) return httpError(c, 400, "invalid_versions", read.reason);
    // The host a sys.receiver's endpoint must not name (DESIGN section 7), besides PUBLIC_URL's.
    const requestHost = new URL(c.req.url).host;
    return answer(c, await space(c, id).append(read.versions, { requestHost, client: clientAddress(c.req.raw.headers, c.env) }));
  });

  app.get(`${SPACES_PATH}/:id/versions`, async (c) => {
    const id = c.req.param("id");
    const q = logQuerySchema.safeParse(c.req.query());
    if (!q.success) return httpError(c, 400, "invalid_query", firstIssue(q.error));
    const proof = { authorization: c.req.header("authorization") ?? null, time: c.req.header(TIME_HEADER) ?? null };
    return answer(c, await space(c, id).page(q.data, proof, clientAddress(c.req.raw.headers, c.env)));
  });

  app.all(`${HOST_PATH}/accounts`, (c) => methodNotAllowed(c, ["POST"]));
  app.all(`${HOST_PATH}/accounts/:did`, (c) => methodNotAllowed(c, ["GET"]));
  app.all(`${SPACES_PATH}/:id/versions`, (c) => methodNotAllowed(c, ["GET", "POST"]));
}
