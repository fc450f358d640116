// A mailbox topic's `receivers` table (docs/mailbox.md, "Receivers"): the push receivers each new
// item wakes, taken by the receiver registry's rules (server/webpush/receivers.ts) and written
// here. The wakes to them are mailbox-wakes.ts'.
import { bytesToHex, randomBytes } from "../../shared/encoding";
import { MAILBOX_LIMITS, WEBPUSH_LIMITS } from "../../shared/limits";
import type { EndpointPolicy } from "../../server/webpush/endpoint";
import type { PushSubscriptionJSON } from "../../shared/webpush/subscription";
import { admitReceiver, type HeldReceiver, type ReceiverRefusal, type RegistryRules } from "../../server/webpush/receivers";

/** A mailbox's rules: anyone may register, so an endpoint held with other keys is refused. */
const rules = (policy: EndpointPolicy | null): RegistryRules => ({
  maxReceivers: MAILBOX_LIMITS.max_receivers,
  maxOrigins: WEBPUSH_LIMITS.max_push_origins_per_topic,
  holder: "a mailbox",
  sameEndpoint: "refuse",
  policy,
});

export class MailboxReceivers {
  constructor(private readonly sql: SqlStorage) {}

  /** Every receiver held (a gone one is deleted, so all are live). */
  held(): HeldReceiver[] {
    return this.sql
      .exec<{ id: string; endpoint: string; p256dh: string; auth: string }>("SELECT id, endpoint, p256dh, auth FROM receivers")
      .toArray()
      .map((r) => ({ id: r.id, endpoint: r.endpoint, keys: { p256dh: r.p256dh, auth: r.auth }, live: true }));
  }

  /**
   * Takes a receiver by the registry's rules: its id (the one held for the same endpoint and keys,
   * or a new one, written), whether it is new, or the refusal.
   */
  add(sub: PushSubscriptionJSON, policy: EndpointPolicy | null): { ok: true; id: string; added: boolean } | ReceiverRefusal {
    const verdict = admitReceiver(this.held(), { endpoint: sub.endpoint, keys: sub.keys }, rules(policy));
    if (!verdict.ok) return verdict;
    if (verdict.held !== null) return { ok: true, id: verdict.held.id, added: false };
    const id = bytesToHex(randomBytes(8));
    this.sql.exec(
      "INSERT INTO receivers (id, endpoint, p256dh, auth, created_at) VALUES (?, ?, ?, ?, ?)",
      id,
      sub.endpoint,
      sub.keys.p256dh,
      sub.keys.auth,
      Date.now(),
    );
    return { ok: true, id, added: true };
  }
}
