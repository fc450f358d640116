// The work a burst leaves for later runs from the object's alarm, a flush interval after it
// (docs/objects.md, "Deferred work"; durable-objects/base/deferred.ts). A test that looks at an
// object's own alarm (an expiry, an audit) after a burst runs that deferred alarm first.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { STATS_LIMITS } from "../../shared/limits";

/** Runs `stub`'s alarm when it is due within the flush interval (the deferred work of a burst); its run sets none of its own. */
export async function runDeferred(stub: DurableObjectStub): Promise<void> {
  const at = await runInDurableObject(stub, (_o, state) => state.storage.getAlarm());
  if (at !== null && at <= Date.now() + STATS_LIMITS.flush_interval_ms) await runDurableObjectAlarm(stub);
}
