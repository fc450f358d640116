// The relay's HTTPS endpoints as an OpenAPI 3.1 document (GET /openapi.json), generated from the
// zod schemas the routes read requests with and the Durable Objects build answers with (zod 4's
// toJSONSchema: JSON Schema draft 2020-12, OpenAPI 3.1's own dialect). Pure: the same document
// for every relay; the server is the one it is fetched from. The WebSocket endpoints appear as
// their upgrade; their messages are under docs/schemas/ (scripts/schemas.ts).
import * as z from "zod";
import { httpErrorBodySchema } from "../shared/errors";
import { OPENAPI_PATH, relayInfoSchema, SOFTWARE, VERSION } from "./info";
import { adminOperation, operatorPaths } from "./openapi-operator";
import { MAILBOX_LIMITS, MINCA_HOST_LIMITS } from "../shared/limits";
import {
  pageQuerySchema,
  pageSchema,
  postedSchema,
  postQuerySchema,
  receiverAddedSchema,
  receiverIdSchema,
} from "../shared/mailbox/messages";
import { topicSchema } from "../shared/mailbox/topic";
import { carryGrantSchema } from "../shared/minca/carry";
import {
  accountStatusSchema,
  appendedSchema,
  carryStartedSchema,
  logPageSchema,
  logQuerySchema,
  versionsBodySchema,
} from "../shared/minca/host-wire";
import { READ_SCHEME, TIME_HEADER } from "../shared/minca/read-proof";
import { statusAnswerSchema } from "../shared/stats";
import { pushSubscriptionSchema } from "../shared/webpush/subscription";

export { OPENAPI_PATH };

/** Answers, as the relay sends them (zod's output side). */
const ANSWERS = {
  ErrorBody: httpErrorBodySchema,
  RelayInfo: relayInfoSchema,
  MailboxPosted: postedSchema,
  MailboxPage: pageSchema,
  ReceiverAdded: receiverAddedSchema,
  CarryStarted: carryStartedSchema,
  AccountStatus: accountStatusSchema,
  VersionsAppended: appendedSchema,
  LogPage: logPageSchema,
  StatusSnapshot: statusAnswerSchema,
} satisfies Record<string, z.ZodType>;

/** Request bodies, as the relay accepts them (zod's input side). */
const REQUESTS = {
  PushSubscription: pushSubscriptionSchema,
  CarryGrant: carryGrantSchema,
  Versions: versionsBodySchema,
} satisfies Record<string, z.ZodType>;

export type SchemaName = keyof typeof ANSWERS | keyof typeof REQUESTS;

type Json = Record<string, unknown>;

/** The JSON Schemas of a set of named zod schemas, referring to each other by components.schemas. */
function componentSchemas(named: Record<string, z.ZodType>, io: "input" | "output"): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(named)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, { io, unrepresentable: "any", uri: (id) => `#/components/schemas/${id}` });
  // $schema and $id are the registry's; in a component the document's dialect and place say them.
  return Object.fromEntries(Object.entries(schemas).map(([id, s]) => [id, strip(s as Json)]));
}

function strip(schema: Json): Json {
  const { $schema: _s, $id: _i, ...rest } = schema;
  return rest;
}

/** One JSON Schema of a zod schema, inline (path and query parameters). */
function inline(schema: z.ZodType): Json {
  return strip(z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Json);
}

const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });
const json = (description: string, name: SchemaName) => ({ description, content: { "application/json": { schema: ref(name) } } });
const error = (description: string) => json(description, "ErrorBody");
const retryAfter = { "Retry-After": { description: "seconds until a retry may succeed", schema: { type: "integer", minimum: 0 } } };
const rateLimited = { ...error("rate_limited: too many requests from this client; Retry-After says when to retry"), headers: retryAfter };

function pathParam(name: string, schema: z.ZodType, description: string): Json {
  return { name, in: "path", required: true, description, schema: inline(schema) };
}

/** The query parameters of a zod object schema, each with the JSON Schema of its input. */
function queryParams(schema: z.ZodObject, descriptions: Record<string, string>): Json[] {
  const s = inline(schema) as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(s.properties ?? {}).map(([name, p]) => ({
    name,
    in: "query",
    required: (s.required ?? []).includes(name),
    ...(descriptions[name] ? { description: descriptions[name] } : {}),
    schema: p,
  }));
}

const pageDescriptions = (bounds: { page_max_items: number; max_wait_seconds: number }) => ({
  after: "items after this seq (default 0: from the oldest)",
  limit: `at most this many items, 1-${bounds.page_max_items} (default ${bounds.page_max_items})`,
  wait: `seconds to hold the request open while there is nothing new, at most ${bounds.max_wait_seconds} (default 0)`,
});

const topic = pathParam("topic", topicSchema, "the mailbox: 16-128 characters of [A-Za-z0-9_-]");
const mincaId = z.string().regex(/^b[a-z2-7]{52}$/);

/** A WebSocket endpoint: its upgrade, and where its messages are described. */
function socket(operationId: string, summary: string, param: Json, schemas: string, doc: string): Json {
  return {
    get: {
      operationId,
      summary,
      description: `A WebSocket endpoint (${doc}). Its messages, both ways, are JSON Schemas in docs/schemas/${schemas}.*.json.`,
      tags: ["websocket"],
      parameters: [param, { name: "Upgrade", in: "header", required: true, schema: { type: "string", const: "websocket" } }],
      responses: {
        "101": { description: "switching to the WebSocket protocol" },
        "400": error("bad_request: the path's last segment is not valid"),
        "403": error("banned or not_allowed: the operator's lists refuse this Tally key; blocked: the client address"),
        "426": error("upgrade_required: the request is not a WebSocket upgrade"),
        "503": { ...error("unavailable: a self-hosted relay is shutting down; reconnect shortly"), headers: retryAfter },
      },
    },
  };
}

/** The OpenAPI 3.1 document of every HTTPS endpoint. */
export function openApiDocument(): Json {
  const adminOptional = [{}, { adminToken: [] }];
  return {
    openapi: "3.1.0",
    info: {
      title: SOFTWARE,
      version: VERSION,
      summary: "The relays of Tally, Passnote and Minca: one Cloudflare Worker with Durable Objects.",
      description:
        "Every error is JSON, `ErrorBody`, with a fitting status. Any other method on a path is answered 405 " +
        "(`method_not_allowed`) with the path's methods in `Allow`; an unknown path is 404 (`not_found`), an " +
        "unhandled failure 500 (`internal_error`). Limits are in the information document (GET /).",
      license: { name: "MIT", identifier: "MIT" },
    },
    servers: [{ url: "/" }],
    tags: [
      { name: "relay", description: "the information document, health, this document" },
      { name: "operator", description: "counts for the operator, behind ADMIN_TOKEN when it is set (docs/operating.md)" },
      { name: "admin", description: "the admin API: NIP-86 relay management (docs/admin-api.md)" },
      { name: "websocket", description: "upgrades to the WebSocket protocols" },
      { name: "mailbox", description: "Minca mailboxes and Web Push receivers (docs/mailbox.md); CORS: any origin" },
      { name: "host", description: "the Minca host: accounts and carried spaces (docs/hosting.md); CORS: any origin" },
    ],
    paths: {
      "/": {
        get: {
          operationId: "relayInfo",
          tags: ["relay"],
          summary: "The relay information document: name, software, version, protocols, every limit",
          description: "Answers any origin (Access-Control-Allow-Origin: *). JSON unless the request asks for text/html only.",
          responses: {
            "200": {
              description: "the information document",
              content: { "application/json": { schema: ref("RelayInfo") }, "text/html": { schema: { type: "string" } } },
            },
          },
        },
        post: adminOperation("adminRpc"),
      },
      [OPENAPI_PATH]: {
        get: {
          operationId: "openApi",
          tags: ["relay"],
          summary: "This document",
          description: "Answers any origin (Access-Control-Allow-Origin: *).",
          responses: { "200": { description: "an OpenAPI 3.1 document", content: { "application/json": { schema: { type: "object" } } } } },
        },
      },
      "/healthz": {
        get: {
          operationId: "health",
          tags: ["relay"],
          summary: "Liveness",
          responses: { "200": { description: "the Worker runs", content: { "text/plain": { schema: { type: "string", const: "ok" } } } } },
        },
      },
      "/favicon.ico": {
        get: {
          operationId: "favicon",
          tags: ["relay"],
          summary: "No icon: 204, so browsers stop asking (cached a day)",
          responses: { "204": { description: "no icon" } },
        },
      },
      "/status": {
        get: {
          operationId: "statusPage",
          tags: ["operator"],
          summary: "The status page (HTML, charts)",
          security: adminOptional,
          responses: {
            "200": { description: "the page", content: { "text/html": { schema: { type: "string" } } } },
            "401": {
              ...unauthorized(),
              content: {
                ...(unauthorized().content as Json),
                "text/html": { schema: { type: "string", description: "to a browser (Accept: text/html): the login form" } },
              },
            },
            "429": rateLimited,
          },
        },
      },
      "/status.json": {
        get: {
          operationId: "statusSnapshot",
          tags: ["operator"],
          summary: "The status counts as JSON",
          security: adminOptional,
          responses: {
            "200": json("the counts; `open` says whether they are readable without a token", "StatusSnapshot"),
            "401": unauthorized(),
          },
        },
      },
      "/metrics": {
        get: {
          operationId: "metrics",
          tags: ["operator"],
          summary: "The status counts as Prometheus text (exposition format 0.0.4)",
          security: adminOptional,
          responses: {
            "200": { description: "the metrics", content: { "text/plain": { schema: { type: "string" } } } },
            "401": unauthorized(),
          },
        },
      },
      ...operatorPaths(),
      "/tally/v1/{npub}": {
        ...socket(
          "tallySocket",
          "A Tally device connection",
          pathParam("npub", z.string().regex(/^npub1[02-9ac-hj-np-z]{58}$/), "the user's npub"),
          "tally",
          "docs/tally.md",
        ),
        post: {
          ...adminOperation("adminRpcTally"),
          parameters: [pathParam("npub", z.string(), "any npub: the admin API answers at the Tally endpoint's URL")],
        },
      },
      "/passnote/v2/{room}": socket(
        "passnoteSocket",
        "A Passnote device in a sync room",
        pathParam("room", z.string().regex(/^[A-Za-z0-9_-]{43}$/), "the room id: base64url of 32 bytes"),
        "passnote",
        "docs/passnote.md",
      ),
      "/minca/v1/rooms/{room}": socket(
        "mincaRoomSocket",
        "A Minca code-channel room",
        pathParam("room", mincaId, "the room derived from the code"),
        "minca-rooms",
        "docs/minca-rooms.md",
      ),
      "/minca/v1/mailbox/{topic}": {
        parameters: [topic],
        post: {
          operationId: "mailboxPost",
          tags: ["mailbox"],
          summary: "Store an opaque item",
          parameters: queryParams(postQuerySchema, { until: "unix seconds to keep it until (default and most: 30 days ahead)" }),
          requestBody: {
            required: true,
            description: `the item, at most ${MAILBOX_LIMITS.max_body_bytes} bytes`,
            content: { "application/octet-stream": { schema: { type: "string", contentMediaType: "application/octet-stream" } } },
          },
          responses: {
            "201": json("stored", "MailboxPosted"),
            "400": error("invalid_topic or invalid_until"),
            "413": error("too_large: the item is over the bound"),
            "429": rateLimited,
            "507": error("storage_full: the relay's mailboxes hold their relay-wide total (limits.storage.mailbox_bytes)"),
          },
        },
        get: {
          operationId: "mailboxPage",
          tags: ["mailbox"],
          summary: "A page of items, oldest first; long-polls up to `wait` seconds",
          parameters: queryParams(pageQuerySchema, pageDescriptions(MAILBOX_LIMITS)),
          responses: { "200": json("a page", "MailboxPage"), "400": error("invalid_topic or invalid_query"), "429": rateLimited },
        },
      },
      "/minca/v1/mailbox/{topic}/items/{seq}": {
        parameters: [topic, pathParam("seq", z.string().regex(/^[0-9]{1,15}$/), "the item's seq")],
        get: {
          operationId: "mailboxItem",
          tags: ["mailbox"],
          summary: "One item's blob as it was posted",
          responses: {
            "200": {
              description: "the blob",
              content: { "application/octet-stream": { schema: { type: "string", contentMediaType: "application/octet-stream" } } },
            },
            "400": error("invalid_topic"),
            "404": error("not_found: expired, evicted or never posted"),
            "429": rateLimited,
          },
        },
      },
      "/minca/v1/mailbox/{topic}/receivers": {
        parameters: [topic],
        post: {
          operationId: "mailboxAddReceiver",
          tags: ["mailbox"],
          summary: "Add a Web Push receiver: each new item sends it a wake",
          requestBody: {
            required: true,
            description: `a PushSubscription's JSON, at most ${MAILBOX_LIMITS.max_receiver_body_bytes} bytes`,
            content: { "application/json": { schema: ref("PushSubscription") } },
          },
          responses: {
            "201": json("added (or already there: the same id)", "ReceiverAdded"),
            "400": error("invalid_topic, invalid_subscription or invalid_endpoint"),
            "409": error("receiver_exists (the endpoint with other keys) or too_many_receivers"),
            "413": error("too_large"),
            "429": rateLimited,
          },
        },
      },
      "/minca/v1/mailbox/{topic}/receivers/{id}": {
        parameters: [topic, pathParam("id", receiverIdSchema, "the receiver's id")],
        delete: {
          operationId: "mailboxRemoveReceiver",
          tags: ["mailbox"],
          summary: "Remove a receiver",
          responses: {
            "204": { description: "removed" },
            "400": error("invalid_topic"),
            "404": error("not_found: no such receiver"),
            "429": rateLimited,
          },
        },
      },
      "/minca/v1/host/accounts": {
        post: {
          operationId: "hostConnect",
          tags: ["host"],
          summary: "Connect the host with a CarryGrant",
          security: [{}, { admissionToken: [] }],
          requestBody: {
            required: true,
            description: `a CarryGrant (the Minca protocol §4.3), at most ${MINCA_HOST_LIMITS.max_grant_bytes} bytes`,
            content: { "application/json": { schema: ref("CarryGrant") } },
          },
          responses: {
            "201": json("the host carries the account", "CarryStarted"),
            "400": error("invalid_grant"),
            "401": error("admission_required: the host needs an admission token"),
            "403": error("not_admitted"),
            "409": error("carry_space_conflict: the account is carried with another carry space"),
            "410": error("carry_closed: the account closed this carry space"),
            "413": error("too_large"),
          },
        },
      },
      "/minca/v1/host/accounts/{did}": {
        parameters: [pathParam("did", z.string().regex(/^did:key:z[1-9A-HJ-NP-Za-km-z]+$/), "the account's P-256 did:key")],
        get: {
          operationId: "hostAccountStatus",
          tags: ["host"],
          summary: "What the host holds for an account",
          security: [{ readProof: [] }],
          parameters: [timeHeader()],
          responses: {
            "200": json("the account's status", "AccountStatus"),
            "400": error("bad_request: not a P-256 did:key"),
            "401": error("read_proof_required"),
            "403": error("read_proof_invalid"),
            "410": error("carry_closed: the host holds nothing for the account"),
          },
        },
      },
      "/minca/v1/spaces/{id}/versions": {
        parameters: [pathParam("id", mincaId, "the space id")],
        post: {
          operationId: "spaceAppend",
          tags: ["host"],
          summary: "Append versions to a carried space; each is accepted or refused on its own",
          requestBody: {
            required: true,
            description: `a JSON array of 1 to ${MINCA_HOST_LIMITS.max_versions_per_request} versions, at most ${MINCA_HOST_LIMITS.max_request_bytes} bytes`,
            content: { "application/json": { schema: ref("Versions") } },
          },
          responses: {
            "200": json("each version's fate, in the order sent", "VersionsAppended"),
            "400": error("bad_request (space id) or invalid_versions"),
            "404": error("not_found: the host carries no such space"),
            "413": error("too_large"),
            "429": rateLimited,
            "507": error(
              "quota_exceeded (the space's or the account's bound) or storage_full (the host-wide total, limits.storage.host_bytes)",
            ),
          },
        },
        get: {
          operationId: "spaceLog",
          tags: ["host"],
          summary: "A page of the space's log, oldest first; private spaces need a read proof",
          security: [{}, { readProof: [] }],
          parameters: [...queryParams(logQuerySchema, pageDescriptions(MINCA_HOST_LIMITS)), timeHeader()],
          responses: {
            "200": json("a page", "LogPage"),
            "400": error("bad_request (space id) or invalid_query"),
            "401": error("read_proof_required"),
            "403": error("read_proof_invalid"),
            "404": error("not_found: the host carries no such space"),
            "429": rateLimited,
          },
        },
      },
    },
    components: {
      schemas: { ...componentSchemas(ANSWERS, "output"), ...componentSchemas(REQUESTS, "input") },
      securitySchemes: {
        adminToken: {
          type: "http",
          scheme: "bearer",
          description:
            "the operator's ADMIN_TOKEN; without one the pages are closed, but on a self-hosted relay listening on loopback only",
        },
        nip98: {
          type: "apiKey",
          in: "header",
          name: "Authorization",
          description: "`Nostr <base64 of a NIP-98 event>` signed by a key in ADMIN_PUBKEYS",
        },
        admissionToken: { type: "http", scheme: "bearer", description: "MINCA_HOST_ADMISSION_TOKEN, when the host's admission is `token`" },
        readProof: {
          type: "apiKey",
          in: "header",
          name: "Authorization",
          description: `\`${READ_SCHEME} <base64url ES256 signature>\` by the space's read key, with \`${TIME_HEADER}\` (docs/hosting.md)`,
        },
      },
    },
  };
}

function unauthorized(): Json {
  return {
    ...error("auth_failed: ADMIN_TOKEN is set and the request lacks it"),
    headers: { "WWW-Authenticate": { schema: { type: "string" } } },
  };
}

function timeHeader(): Json {
  return {
    name: TIME_HEADER,
    in: "header",
    required: false,
    description: "unix seconds the read proof was made at",
    schema: { type: "string", pattern: "^[0-9]{1,15}$" },
  };
}
