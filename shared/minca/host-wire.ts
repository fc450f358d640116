// The HTTP wire of a Minca host (DESIGN 8.3-8.4): reading a POST .../versions body into the
// versions as they arrived (raw text kept, so each is stored exactly as sent), and the log's
// query parameters.
import { parseClientJson } from "../client-json";
import { utf8Encode } from "../encoding";
import { rawElements } from "../json-raw";
import { MINCA_HOST_LIMITS } from "../limits";
import { pageQuerySchemaFor } from "../mailbox/messages";

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
