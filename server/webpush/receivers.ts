// The Web Push receiver registry's admission rules (docs/mailbox.md, "Receivers: one registry"): which
// receiver a mailbox topic or a hosted account takes, in one place. Both stores keep their own
// table (durable-objects/mailbox/mailbox-receivers.ts, durable-objects/minca-host/account-receivers.ts)
// and ask admitReceiver() before they write; test/contracts/receiver-registry.ts holds them to it.
// Pure: the caller reads what it holds and passes it in.
//
// The rules, in the order they are asked:
// 1. endpoint: the push-endpoint rule (server/webpush/endpoint.ts checkPushEndpoint), unless the
//    receiver is restored (admitted once already; the rule is asked again before each push);
// 2. same endpoint: a receiver is known by its endpoint. The same endpoint with the same keys is
//    the receiver held; with other keys it is refused (`refuse`: a mailbox, where anyone may
//    register and the id is the proof) or replaces it (`replace`: an account, whose records are
//    signed by the account's own keys);
// 3. count: a new receiver is refused when `maxReceivers` are held (live or gone: each is a row);
// 4. origins: at most `maxOrigins` push origins (registrable domains) among the live receivers,
//    the one replaced left out.
import { checkPushEndpoint, exceedsPushOrigins, type EndpointPolicy } from "./endpoint";

export interface ReceiverKeys {
  p256dh: string;
  auth: string;
}

/** A receiver a store holds. */
export interface HeldReceiver {
  /** The store's name for it (a mailbox's random id, an account's record key). */
  id: string;
  endpoint: string;
  keys: ReceiverKeys;
  /** False once its push service answered 404/410 (an account keeps the row until its record is written again). */
  live: boolean;
}

/** A receiver asking to be held. */
interface CandidateReceiver {
  endpoint: string;
  keys: ReceiverKeys;
}

export interface RegistryRules {
  /** Receivers held at most (mailbox.max_receivers, minca_wake.max_receivers_per_account). */
  maxReceivers: number;
  /** Push origins among the live receivers at most (webpush.max_push_origins_per_topic). */
  maxOrigins: number;
  /** What is held, for the refusals' wording: "a mailbox", "an account". */
  holder: string;
  /** The same endpoint with other keys: refused (`refuse`) or replacing the receiver held (`replace`). */
  sameEndpoint: "refuse" | "replace";
  /** The push-endpoint rule's policy; null for a receiver restored (admitted once already). */
  policy: EndpointPolicy | null;
}

/** Why a receiver was refused; each store says it in its own protocol's codes. */
export type ReceiverRefusalCode = "invalid_endpoint" | "receiver_exists" | "too_many_receivers" | "too_many_origins";

export type ReceiverRefusal = { ok: false; code: ReceiverRefusalCode; detail: string };

/** Taken: `held` is the receiver already at this endpoint (the same one, or the one it replaces), or null for a new one. */
type ReceiverAdmission = { ok: true; held: HeldReceiver | null } | ReceiverRefusal;

/** Two base64url keys are the same key (browsers may add padding). */
function sameKey(a: string, b: string): boolean {
  return a.replace(/=+$/, "") === b.replace(/=+$/, "");
}

const sameKeys = (a: ReceiverKeys, b: ReceiverKeys) => sameKey(a.p256dh, b.p256dh) && sameKey(a.auth, b.auth);

/**
 * Rule 1 alone: the refusal of an endpoint the relay may not push to, or null. The Worker asks it
 * before a mailbox registration costs anything (a share, a client's push origin, the object).
 */
export function endpointRefusal(endpoint: string, policy: EndpointPolicy): ReceiverRefusal | null {
  const rule = checkPushEndpoint(endpoint, policy);
  return rule.ok ? null : { ok: false, code: "invalid_endpoint", detail: rule.reason };
}

/** Whether `candidate` may be held beside `held`, by the rules above. Never throws. */
export function admitReceiver(held: readonly HeldReceiver[], candidate: CandidateReceiver, rules: RegistryRules): ReceiverAdmission {
  const bad = rules.policy === null ? null : endpointRefusal(candidate.endpoint, rules.policy);
  if (bad !== null) return bad;
  const known = held.find((r) => r.endpoint === candidate.endpoint) ?? null;
  if (known !== null && rules.sameEndpoint === "refuse" && !sameKeys(known.keys, candidate.keys)) {
    return {
      ok: false,
      code: "receiver_exists",
      detail: "this endpoint is registered with other keys; its registrant may DELETE it by its id and register again",
    };
  }
  if (known === null && held.length >= rules.maxReceivers) {
    return { ok: false, code: "too_many_receivers", detail: `${rules.holder} has at most ${rules.maxReceivers} receivers` };
  }
  const others = held.filter((r) => r.live && r !== known).map((r) => r.endpoint);
  if (exceedsPushOrigins(others, candidate.endpoint, rules.maxOrigins)) {
    return {
      ok: false,
      code: "too_many_origins",
      detail: `${rules.holder}'s receivers are at most ${rules.maxOrigins} push origins (registrable domains)`,
    };
  }
  return { ok: true, held: known };
}
