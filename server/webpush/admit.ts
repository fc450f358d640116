// Which of the pushes about to be sent go now (docs/mailbox.md, "Sending against a hostile push
// service"): each push origin (a registrable domain, endpoint.ts pushDomain) has a relay-wide
// gate, and the relay as a whole has one more, so neither many subdomains of one domain nor many
// domains turn the relay into an amplifier. Pure: the caller says how a gate is asked (a Durable
// Object per gate on the relay, plain token buckets in tests).
import { WEBPUSH_LIMITS } from "../../shared/limits";
import type { Rate } from "../../shared/rate-limit";
import { pushDomain } from "./endpoint";

/** A gate's answer: how many of the pushes asked for go now, and when to ask again for the rest. */
interface GateGrant {
  granted: number;
  retryAfterMs: number;
}

/** Asks the gate named `name` (with the rate it enforces) for `n` pushes; may throw. */
export type AskGate = (name: string, n: number, rate: Rate) => Promise<GateGrant>;

/** The relay-wide gate's name (a push origin's gate is named `domain:<registrable domain>`). */
const RELAY_GATE = "relay";
const ORIGIN_RATE: Rate = { burst: WEBPUSH_LIMITS.origin_push_burst, perSecond: WEBPUSH_LIMITS.origin_pushes_per_second };
const RELAY_RATE: Rate = { burst: WEBPUSH_LIMITS.relay_push_burst, perSecond: WEBPUSH_LIMITS.relay_pushes_per_second };

export interface Admission<T> {
  go: T[];
  wait: Array<{ item: T; at: number }>;
  /** The push origins some of whose pushes wait, with the gate that held them (for the log). */
  held: Array<{ origin: string; gate: "origin" | "relay"; waiting: number }>;
}

/**
 * Splits pushes into those the gates admit now and those that wait (with the time to try again).
 * Each push origin's gate is asked first; what they grant together is then asked of the relay's
 * gate, which admits the origins in turn (one push each, round after round) so one busy origin
 * cannot take the whole relay budget. A gate that cannot be asked holds its pushes for `fallbackMs`.
 */
export async function admitThroughGates<T>(
  ask: AskGate,
  items: T[],
  endpointOf: (item: T) => string,
  fallbackMs: number,
  now: () => number = Date.now,
): Promise<Admission<T>> {
  const byOrigin = new Map<string, T[]>();
  for (const item of items) {
    const o = pushDomain(endpointOf(item));
    const list = byOrigin.get(o);
    if (list) list.push(item);
    else byOrigin.set(o, [item]);
  }
  const grantOf = async (name: string, n: number, rate: Rate): Promise<GateGrant> => {
    if (n === 0) return { granted: 0, retryAfterMs: 0 };
    try {
      const g = await ask(name, n, rate);
      return { granted: Math.max(0, Math.min(n, g.granted)), retryAfterMs: g.retryAfterMs };
    } catch {
      return { granted: 0, retryAfterMs: fallbackMs };
    }
  };
  const origins = [...byOrigin];
  const grants = await Promise.all(origins.map(([origin, list]) => grantOf(`domain:${origin}`, list.length, ORIGIN_RATE)));
  const total = grants.reduce((sum, g) => sum + g.granted, 0);
  const relay = await grantOf(RELAY_GATE, total, RELAY_RATE);
  // The relay's grant, shared out in turn among the origins that were granted any.
  const share = origins.map(() => 0);
  let left = relay.granted;
  for (let round = 0; left > 0; round++) {
    let any = false;
    for (let i = 0; i < origins.length && left > 0; i++) {
      if (grants[i].granted > round) {
        share[i]++;
        left--;
        any = true;
      }
    }
    if (!any) break;
  }
  const out: Admission<T> = { go: [], wait: [], held: [] };
  const t = now();
  origins.forEach(([origin, list], i) => {
    out.go.push(...list.slice(0, share[i]));
    const byOriginGate = list.slice(grants[i].granted);
    const byRelayGate = list.slice(share[i], grants[i].granted);
    for (const item of byRelayGate) out.wait.push({ item, at: t + Math.max(1, relay.retryAfterMs) });
    for (const item of byOriginGate) out.wait.push({ item, at: t + Math.max(1, grants[i].retryAfterMs) });
    if (byOriginGate.length > 0) out.held.push({ origin, gate: "origin", waiting: byOriginGate.length });
    if (byRelayGate.length > 0) out.held.push({ origin, gate: "relay", waiting: byRelayGate.length });
  });
  return out;
}
