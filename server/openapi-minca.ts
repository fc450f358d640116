// The Minca paths of the OpenAPI document (server/openapi.ts): mailboxes with their Web Push
// receivers (docs/mailbox.md), and the host's accounts and carried spaces (docs/hosting.md).
import * as z from "zod";
import { MAILBOX_LIMITS, MINCA_HOST_LIMITS } from "../shared/limits";
import { pageQuerySchema, postQuerySchema, receiverIdSchema } from "../shared/mailbox/messages";
import { topicSchema } from "../shared/mailbox/topic";
import { logQuerySchema } from "./minca/host-wire";
import { TIME_HEADER } from "../shared/minca/read-proof";
import { error, json, type Json, mincaId, pageDescriptions, pathParam, queryParams, rateLimited, ref } from "./openapi-parts";

const topic = pathParam("topic", topicSchema, "the mailbox: 16-128 characters of [A-Za-z0-9_-]");

/** The mailbox and host paths. */
export function mincaPaths(): Record<string, Json> {
  return {
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
