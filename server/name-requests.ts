// The per-client bucket of requests that start named objects (docs/hostile.md, "Requests that
// start objects"), held in this isolate's memory and keyed by the client address: the Worker takes
// a token for each request addressed to a named object, and a Tally user's object for each first
// envelope its user sends to another user (that user's object may not exist yet). Not applied to
// the shared client (no trusted address): one bucket for everyone would lock everyone out.
import { COMMON_LIMITS } from "../shared/limits";
import { ClientBuckets } from "../shared/rate-limit";
import { SHARED_CLIENT } from "./object-headers";

const buckets = new ClientBuckets<"object">({
  object: { burst: COMMON_LIMITS.client_object_requests_burst, perSecond: COMMON_LIMITS.client_object_requests_per_second },
});

/** Takes one token of `client`'s bucket: 0 when taken, else the ms to wait (nothing taken). Never waits for the shared client. */
export function newNameWaitMs(client: string, now = Date.now()): number {
  if (client === SHARED_CLIENT) return 0;
  return (buckets.take("object", client, 1, now) ?? 0) * 1000;
}
