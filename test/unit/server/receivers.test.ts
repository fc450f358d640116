// The receiver registry's admission (server/webpush/receivers.ts), pure: fuzzed with fast-check
// (it never throws, a refusal is one of the typed codes with a detail, and the bounds hold over any
// sequence of registrations), plus the rules' order. The rules themselves, as each store applies
// them, are the contract's (test/contracts/receiver-registry.ts).
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  admitReceiver,
  type HeldReceiver,
  type ReceiverKeys,
  type ReceiverRefusalCode,
  type RegistryRules,
} from "../../../server/webpush/receivers";
import { pushDomain, type EndpointPolicy } from "../../../server/webpush/endpoint";

const CODES: ReceiverRefusalCode[] = ["invalid_endpoint", "receiver_exists", "too_many_receivers", "too_many_origins"];
const POLICY: EndpointPolicy = { allow: [], ownHosts: ["relay.example"] };

const keys = fc.record<ReceiverKeys>({ p256dh: fc.constantFrom("k1", "k2", "k1="), auth: fc.constantFrom("a1", "a2") });
const endpoint = fc.oneof(
  fc.string(),
  fc.webUrl(),
  fc
    .tuple(
      fc.constantFrom("https://", "http://"),
      fc.constantFrom("a.", "b.", ""),
      fc.constantFrom("p1.com", "p2.com", "p3.net", "p4.org", "p5.io", "127.0.0.1", "relay.example"),
      fc.nat(6),
    )
    .map(([s, sub, host, i]) => `${s}${sub}${host}/sub/${i}`),
);
const candidate = fc.record({ endpoint, keys });
const held = fc.array(fc.record<HeldReceiver>({ id: fc.string(), endpoint, keys, live: fc.boolean() }), { maxLength: 12 });
const rules = fc.record({
  maxReceivers: fc.nat(10),
  maxOrigins: fc.nat(5),
  holder: fc.constant("a store"),
  sameEndpoint: fc.constantFrom("refuse" as const, "replace" as const),
  policy: fc.constantFrom(POLICY, null),
});

describe("receiver registry admission", () => {
  it("never throws: any held set, candidate and rules answer ok or a typed refusal with a detail", () => {
    fc.assert(
      fc.property(held, candidate, rules, (h, c, r) => {
        const a = admitReceiver(h, c, r);
        if (a.ok) expect(a.held === null || h.includes(a.held)).toBe(true);
        else {
          expect(CODES).toContain(a.code);
          expect(typeof a.detail).toBe("string");
          expect(a.detail.length).toBeGreaterThan(0);
        }
      }),
    );
  });

  it("the bounds hold over any sequence: at most maxReceivers held, at most maxOrigins push origins among the live ones, one receiver per endpoint", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(candidate, fc.boolean()), { maxLength: 40 }), rules, (steps, r) => {
        let store: HeldReceiver[] = [];
        let id = 0;
        for (const [c, goneAfter] of steps) {
          const a = admitReceiver(store, c, r);
          if (!a.ok) continue;
          const row: HeldReceiver = { id: String(++id), endpoint: c.endpoint, keys: c.keys, live: !goneAfter };
          store = a.held === null ? [...store, row] : store.map((x) => (x === a.held ? row : x));
          expect(store.length).toBeLessThanOrEqual(r.maxReceivers);
          expect(new Set(store.map((x) => x.endpoint)).size).toBe(store.length);
          expect(new Set(store.filter((x) => x.live).map((x) => pushDomain(x.endpoint))).size).toBeLessThanOrEqual(
            Math.max(r.maxOrigins, 0),
          );
        }
      }),
    );
  });

  it("the endpoint rule is asked first: an endpoint the relay may not push to is invalid_endpoint whatever is held", () => {
    const full: HeldReceiver[] = [{ id: "1", endpoint: "https://p1.com/1", keys: { p256dh: "x", auth: "y" }, live: true }];
    const r: RegistryRules = { maxReceivers: 0, maxOrigins: 0, holder: "a store", sameEndpoint: "refuse", policy: POLICY };
    const a = admitReceiver(full, { endpoint: "https://127.0.0.1/1", keys: { p256dh: "x", auth: "y" } }, r);
    expect(a).toMatchObject({ ok: false, code: "invalid_endpoint" });
  });

  it("same endpoint, same keys (padding aside): the receiver held, whatever the bounds", () => {
    const k: ReceiverKeys = { p256dh: "k", auth: "a" };
    const h: HeldReceiver[] = [{ id: "1", endpoint: "https://p1.com/1", keys: k, live: true }];
    const r: RegistryRules = { maxReceivers: 1, maxOrigins: 1, holder: "a store", sameEndpoint: "refuse", policy: POLICY };
    expect(admitReceiver(h, { endpoint: "https://p1.com/1", keys: { p256dh: "k==", auth: "a=" } }, r)).toEqual({ ok: true, held: h[0] });
  });
});
