// The parts the OpenAPI document (server/openapi.ts) is built of: the named component schemas,
// generated from the zod schemas the routes read requests with and the Durable Objects build answers
// with (zod 4's toJSONSchema: JSON Schema draft 2020-12, OpenAPI 3.1's own dialect), and the small
// builders of parameters and answers every group of paths uses.
import * as z from "zod";
import { httpErrorBodySchema } from "../shared/errors";
import { relayInfoSchema } from "./info";
import { pageSchema, postedSchema, receiverAddedSchema } from "../shared/mailbox/messages";
import { carryGrantSchema } from "../shared/minca/carry";
import { accountStatusSchema, appendedSchema, carryStartedSchema, logPageSchema, versionsBodySchema } from "./minca/host-wire";
import { statusAnswerSchema } from "./stats";
import { pushSubscriptionSchema } from "../shared/webpush/subscription";

/** Answers, as the relay sends them (zod's output side). */
export const ANSWERS = {
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
export const REQUESTS = {
  PushSubscription: pushSubscriptionSchema,
  CarryGrant: carryGrantSchema,
  Versions: versionsBodySchema,
} satisfies Record<string, z.ZodType>;

type SchemaName = keyof typeof ANSWERS | keyof typeof REQUESTS;

export type Json = Record<string, unknown>;

/** The JSON Schemas of a set of named zod schemas, referring to each other by components.schemas. */
export function componentSchemas(named: Record<string, z.ZodType>, io: "input" | "output"): Record<string, Json> {
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

export const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });
export const json = (description: string, name: SchemaName) => ({ description, content: { "application/json": { schema: ref(name) } } });
export const error = (description: string) => json(description, "ErrorBody");
export const retryAfter = { "Retry-After": { description: "seconds until a retry may succeed", schema: { type: "integer", minimum: 0 } } };
export const rateLimited = {
  ...error("rate_limited: too many requests from this client; Retry-After says when to retry"),
  headers: retryAfter,
};

export function pathParam(name: string, schema: z.ZodType, description: string): Json {
  return { name, in: "path", required: true, description, schema: inline(schema) };
}

/** The query parameters of a zod object schema, each with the JSON Schema of its input. */
export function queryParams(schema: z.ZodObject, descriptions: Record<string, string>): Json[] {
  const s = inline(schema) as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(s.properties ?? {}).map(([name, p]) => ({
    name,
    in: "query",
    required: (s.required ?? []).includes(name),
    ...(descriptions[name] ? { description: descriptions[name] } : {}),
    schema: p,
  }));
}

export const pageDescriptions = (bounds: { page_max_items: number; max_wait_seconds: number }) => ({
  after: "items after this seq (default 0: from the oldest)",
  limit: `at most this many items, 1-${bounds.page_max_items} (default ${bounds.page_max_items})`,
  wait: `seconds to hold the request open while there is nothing new, at most ${bounds.max_wait_seconds} (default 0)`,
});

export const mincaId = z.string().regex(/^b[a-z2-7]{52}$/);
