// The HTTP wire of a Minca host (docs/hosting.md-8.4): reading a POST .../versions body into the
// versions as they arrived (raw text kept, so each is stored exactly as sent), the log's query
// parameters, and the schemas of the host's answers (the Durable Objects build them, the
// OpenAPI document in server/openapi.ts publishes them).
import * as z from "zod";
import { parseClientJson } from "../../shared/client-json";
import { utf8Encode } from "../../shared/encoding";
import { rawElements } from "../../shared/json-raw";
import { MINCA_HOST_LIMITS } from "../../shared/limits";
import { pageQuerySchemaFor } from "../../shared/mailbox/messages";
import { VERSION_REFUSALS, versionSchema } from "../../shared/minca/version";

/** GET .../versions?after=&limit=&wait= (all optional): the mailbox's page shape, the host's bounds. */
export const logQuerySchema = pageQuerySchemaFor(MINCA_HOST_LIMITS);

export interface ArrivedVersion {
  raw: string;
  value: unknown;
  bytes: number;
}

/** The versions of a request body: a JSON array of 1 to 100 values, each kept as its raw text. */
export function readVersionsBody(text: string): { ok: true; versions: ArrivedVersion[] } | { ok: false; reason: string } {
  const json = parseClientJson(text);
  if (!json.ok) return { ok: false, reason: `the body is not a JSON array of versions: ${json.reason}` };
  const parsed = json.value;
  if (!Array.isArray(parsed)) return { ok: false, reason: "the body is a JSON array of versions" };
  if (parsed.length === 0 || parsed.length > MINCA_HOST_LIMITS.max_versions_per_request) {
    return { ok: false, reason: `a request carries 1 to ${MINCA_HOST_LIMITS.max_versions_per_request} versions` };
  }
  const raws = rawElements(text);
  if (!raws || raws.length !== parsed.length) return { ok: false, reason: "the body is not a plain JSON array" };
  return { ok: true, versions: parsed.map((value, i) => ({ raw: raws[i], value, bytes: utf8Encode(raws[i]).length })) };
}

const did = z.string().describe("the account's P-256 did:key");
const mincaId = z.string().regex(/^b[a-z2-7]{52}$/);
const count = z.number().int().nonnegative();

/** POST /minca/v1/spaces/<id>/versions: a JSON array of versions (each one checked on its own). */
export const versionsBodySchema = z.array(versionSchema).min(1).max(MINCA_HOST_LIMITS.max_versions_per_request);

/** 201 to POST /minca/v1/host/accounts: the host carries the account. */
export const carryStartedSchema = z.object({ account: did, carry_space: mincaId });
export type CarryStarted = z.infer<typeof carryStartedSchema>;

/** 200 to GET /minca/v1/host/accounts/<did>: what the host holds for the account. */
export const accountStatusSchema = z.object({
  account: did,
  name: z.string().nullable(),
  carry_space: mincaId,
  spaces: count,
  links: count,
  wakes: count,
  receivers: count,
  versions: count,
  bytes: count,
});
export type AccountStatus = z.infer<typeof accountStatusSchema>;

/** One version's fate in a POST .../versions answer, in the order sent. */
const versionResultSchema = z.union([
  z.object({ id: mincaId, accepted: z.literal(true), seq: count.positive() }),
  z.object({ id: z.string().optional(), accepted: z.literal(false), reason: z.enum(VERSION_REFUSALS), detail: z.string() }),
]);
export type VersionResult = z.infer<typeof versionResultSchema>;

/** 200 to POST .../versions. */
export const appendedSchema = z.object({ results: z.array(versionResultSchema) });
export type Appended = z.infer<typeof appendedSchema>;

/** 200 to GET .../versions: a page of the space's log, oldest first (the mailbox's page shape). */
export const logPageSchema = z.object({
  items: z.array(z.object({ seq: count.positive(), version: z.unknown().describe("the version exactly as it was posted") })),
  next: count,
  more: z.boolean(),
  oldest_seq: count.nullable(),
});
export type LogPage = z.infer<typeof logPageSchema>;

/**
 * The root account each arrived version claims (its note's `iss`), unchecked: enough to refuse a
 * request from an account the operator banned before any signature is verified (a version that
 * claims a root falsely would fail the gates anyway).
 */
export function claimedRoots(versions: ArrivedVersion[]): string[] {
  const out: string[] = [];
  for (const { value } of versions) {
    const iss = (value as { note?: { payload?: { iss?: unknown } } } | null)?.note?.payload?.iss;
    if (typeof iss === "string") out.push(iss);
  }
  return out;
}
