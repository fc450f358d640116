// Out of resources, refuse; never stop (docs/operating.md, "Open files"): a request or upgrade whose
// object cannot be started or cannot open its database (the process is out of file descriptors or
// memory) is answered 503 `unavailable` with Retry-After, as a client can wait and come back,
// instead of a 500. The relay keeps serving what it holds, and /healthz needs no object.
import { overloaded } from "../server/objects";
import { COMMON_LIMITS } from "../shared/limits";

/**
 * What the runtime's errors say when it ran out of a resource: SQLite's CANTOPEN, EMFILE and
 * friends, memory; and the runtime's own internal error, which is all the Worker sees of those
 * (an object that cannot open its database at EMFILE reaches the Worker as "internal error;
 * reference = …", its cause only in the runtime's log). The relay's own failures are JavaScript
 * errors with their own messages, and stay 500.
 */
const OUT_OF_RESOURCES =
  /SQLITE_CANTOPEN|unable to open database|too many open files|EMFILE|ENFILE|out of memory|ENOMEM|exceeded its memory limit|Durable Object is overloaded|Cannot allocate memory|^internal error; reference = /i;

/**
 * Whether `err` (or what caused it) says the runtime ran out of a resource, or that a Durable
 * Object is overloaded (`err.overloaded`, too many calls queued at it: server/objects.ts never
 * retries those).
 */
export function outOfResources(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 4; depth++) {
    if (overloaded(e)) return true;
    const text = e instanceof Error ? e.message : typeof e === "string" ? e : "";
    if (OUT_OF_RESOURCES.test(text)) return true;
    e = e instanceof Error ? e.cause : undefined;
  }
  return false;
}

/** The answer's Retry-After, in seconds. */
export const UNAVAILABLE_RETRY_SECONDS = COMMON_LIMITS.unavailable_retry_seconds;
