// The relay's HTTPS endpoints as an OpenAPI 3.1 document (GET /openapi.json), generated from the
// zod schemas the routes read requests with and the Durable Objects build answers with (the
// components, server/openapi-parts.ts). Pure: the same document for every relay; the server is the
// one it is fetched from. The WebSocket endpoints appear as their upgrade; their messages are under
// docs/schemas/ (scripts/schemas.ts). The Minca paths are in server/openapi-minca.ts, the
// operator's in server/openapi-operator.ts.
import * as z from "zod";
import { OPENAPI_PATH, SOFTWARE, VERSION } from "./info";
import { mincaPaths } from "./openapi-minca";
import { adminOperation, operatorPaths } from "./openapi-operator";
import {
  ANSWERS,
  componentSchemas,
  error,
  json,
  type Json,
  mincaId,
  pathParam,
  rateLimited,
  REQUESTS,
  ref,
  retryAfter,
} from "./openapi-parts";
import { READ_SCHEME, TIME_HEADER } from "../shared/minca/read-proof";

export { OPENAPI_PATH };

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
        "101": {
          description:
            "switching to the WebSocket protocol (a Tally key the operator's lists refuse gets its socket only for an error frame, banned or not_allowed, and close 1008)",
        },
        "400": error("bad_request: the path's last segment is not valid"),
        "403": error("blocked: the operator blocked the client address"),
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
      ...mincaPaths(),
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
