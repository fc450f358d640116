// The relay's own dependencies of a push outbox: its VAPID sender (relay-keys.ts), the origins'
// gates (push-gate.ts) and the push-endpoint rule of its settings (parsed: base/object-settings.ts).
import { endpointPolicyOf } from "../../server/webpush/endpoint";
import { objectSettings } from "../base/object-settings";
import type { FetchLike } from "../../server/webpush/send";
import { relayPushSender } from "../relay/relay-keys";
import { admitPushes } from "./push-gate";
import type { OutboxDeps, PushSender } from "./push-outbox";

/** The outbox dependencies of an object of this relay; `fetch` is what pushes go out with. */
export function relayOutboxDeps(env: Env, fetch: FetchLike, delivered?: () => void): OutboxDeps {
  let sender: PushSender | undefined;
  return {
    sender: async () => (sender ??= await relayPushSender(env, objectSettings(env), fetch)),
    admit: (items, endpointOf, fallbackMs) => admitPushes(env, items, endpointOf, fallbackMs),
    policy: () => endpointPolicyOf(objectSettings(env)),
    delivered,
  };
}
