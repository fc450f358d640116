// The HTTP wire of a Minca host (DESIGN 8.3-8.4): reading a POST .../versions body into the
// versions as they arrived (raw text kept, so each is stored exactly as sent), and the log's
// query parameters.
import { z } from "zod";
import { utf8Encode } from "../encoding";
import { rawElements } from "../json-raw";
import { MINCA_HOST_LIMITS } from "../limits";

const uint = z.string().regex(/^\d{1,15}$/, "must be a non-negative integer").transform(Number);

/** GET .../versions?after=&limit=&wait= (all optional). */
export const logQuerySchema = z.object({
  after: uint.optional().default(0),
  limit: uint
    .optional()
    .default(MINCA_HOST_LIMITS.page_max_items)
    .refine((n) => n >= 1 && n <= MINCA_HOST_LIMITS.page_max_items, `limit must be 1-${MINCA_HOST_LIMITS.page_max_items}`),
  wait: uint
    .optional()
    .default(0)
    .refine((n) => n <= MINCA_HOST_LIMITS.max_wait_seconds, `wait must be at most ${MINCA_HOST_LIMITS.max_wait_seconds}`),
});

export interface ArrivedVersion {
  raw: string;
  value: unknown;
  bytes: number;
}

/** The versions of a request body: a JSON array of 1 to 100 values, each kept as its raw text. */
export function readVersionsBody(text: string): { ok: true; versions: ArrivedVersion[] } | { ok: false; reason: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { ok: false, reason: "the body is not JSON" };
  }
  if (!Array.isArray(parsed)) return { ok: false, reason: "the body is a JSON array of versions" };
  if (parsed.length === 0 || parsed.length > MINCA_HOST_LIMITS.max_versions_per_request) {
    return { ok: false, reason: `a request carries 1 to ${MINCA_HOST_LIMITS.max_versions_per_request} versions` };
  }
  const raws = rawElements(text);
  if (!raws || raws.length !== parsed.length) return { ok: false, reason: "the body is not a plain JSON array" };
  return { ok: true, versions: parsed.map((value, i) => ({ raw: raws[i], value, bytes: utf8Encode(raws[i]).length })) };
}
