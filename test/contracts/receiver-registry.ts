// The Web Push receiver registry's contract (server/webpush/receivers.ts): one suite that every
// store of receivers runs (a mailbox topic's, a hosted account's), so that they all take receivers
// by one set of rules. A store brings a harness: a way to add a receiver through its table module,
// to have its push service call one gone (the store's own outbox path), and to look at what it
// holds. Each test is named after the rule it holds the store to.
import { describe, expect, it } from "vitest";
import { WEBPUSH_LIMITS } from "../../shared/limits";
import type { EndpointPolicy } from "../../server/webpush/endpoint";
import type { ReceiverKeys, ReceiverRefusalCode } from "../../server/webpush/receivers";

export type Added = { ok: true } | { ok: false; code: ReceiverRefusalCode; detail: string };

export interface RegistryHarness {
  /** What the store does with an endpoint it holds, asked again with other keys. */
  sameEndpoint: "refuse" | "replace";
  /** How many receivers the store holds at most. */
  maxReceivers: number;
  /** Whether a gone receiver's row is kept (an account: marked gone) or forgotten (a mailbox). */
  goneKept: boolean;
  /** Adds a receiver through the store's table module (policy null: a receiver restored). */
  add(endpoint: string, keys: ReceiverKeys, policy: EndpointPolicy | null): Added;
  /** The push service answered 404/410 for the receiver at `endpoint` (the store's outbox `gone`). */
  gone(endpoint: string): void;
  /** The receivers held: endpoint and keys. */
  held(): Array<{ endpoint: string; keys: ReceiverKeys }>;
}

/** Runs `f` with a fresh, empty store (inside its object). */
export type WithRegistry = (f: (h: RegistryHarness) => Promise<void> | void) => Promise<void>;

const POLICY: EndpointPolicy = { allow: [], ownHosts: ["relay.example"] };
const KEYS: ReceiverKeys = { p256dh: `B${"k".repeat(86)}`, auth: "a".repeat(22) };
const OTHER_KEYS: ReceiverKeys = { p256dh: `B${"q".repeat(86)}`, auth: "b".repeat(22) };

const unpad = (k: string) => k.replace(/=+$/, "");

let n = 0;
const at = (origin = "https://push.example") => `${origin}/sub/${++n}`;

export function receiverRegistryContract(name: string, withRegistry: WithRegistry): void {
  describe(`receiver registry contract: ${name}`, () => {
    it("endpoint rule: an endpoint the relay may not push to is refused invalid_endpoint, and nothing is held", () =>
      withRegistry((h) => {
        for (const bad of [
          "http://push.example/sub/1",
          "https://127.0.0.1/sub/1",
          "https://push.example:8443/sub/1",
          "https://localhost/sub/1",
          "https://relay.example/sub/1",
          "https://push.example/minca/v1/mailbox/x",
          "not a url",
        ]) {
          const r = h.add(bad, KEYS, POLICY);
          expect(r.ok, bad).toBe(false);
          if (!r.ok) expect(r.code, bad).toBe("invalid_endpoint");
        }
        expect(h.held()).toEqual([]);
      }));

    it("endpoint rule: a receiver restored (admitted once already) is not asked it again", () =>
      withRegistry((h) => {
        expect(h.add("https://127.0.0.1/sub/1", KEYS, null)).toEqual({ ok: true });
        expect(h.held().map((r) => r.endpoint)).toEqual(["https://127.0.0.1/sub/1"]);
      }));

    it("same endpoint, same keys: the receiver held is the one taken, never a second (padding aside)", () =>
      withRegistry((h) => {
        const e = at();
        expect(h.add(e, KEYS, POLICY)).toEqual({ ok: true });
        expect(h.add(e, { p256dh: `${KEYS.p256dh}=`, auth: `${KEYS.auth}==` }, POLICY)).toEqual({ ok: true });
        const unpadded = h.held().map((r) => ({ endpoint: r.endpoint, keys: { p256dh: unpad(r.keys.p256dh), auth: unpad(r.keys.auth) } }));
        expect(unpadded).toEqual([{ endpoint: e, keys: KEYS }]);
      }));

    it("same endpoint, other keys: refused receiver_exists where anyone registers, replaces the keys where the account signs; never a second", () =>
      withRegistry((h) => {
        const e = at();
        expect(h.add(e, KEYS, POLICY)).toEqual({ ok: true });
        const r = h.add(e, OTHER_KEYS, POLICY);
        if (h.sameEndpoint === "refuse") {
          expect(r.ok ? null : r.code).toBe("receiver_exists");
          expect(h.held()).toEqual([{ endpoint: e, keys: KEYS }]);
        } else {
          expect(r).toEqual({ ok: true });
          expect(h.held()).toEqual([{ endpoint: e, keys: OTHER_KEYS }]);
        }
      }));

    it("count: past the store's bound a new receiver is refused too_many_receivers, one already held is still taken", () =>
      withRegistry((h) => {
        const held: string[] = [];
        for (let i = 0; i < h.maxReceivers; i++) {
          const e = at();
          held.push(e);
          expect(h.add(e, KEYS, POLICY)).toEqual({ ok: true });
        }
        const r = h.add(at(), KEYS, POLICY);
        expect(r.ok ? null : r.code).toBe("too_many_receivers");
        expect(h.add(held[0], KEYS, POLICY)).toEqual({ ok: true });
        expect(h.held()).toHaveLength(h.maxReceivers);
      }));

    it("count: the bound is on rows held, so a gone receiver counts as long as its row is kept", () =>
      withRegistry((h) => {
        // A mailbox forgets a gone receiver (its row goes); an account keeps the row, marked gone,
        // until its record is written again or deleted.
        for (let i = 0; i < h.maxReceivers; i++) expect(h.add(at(), KEYS, POLICY)).toEqual({ ok: true });
        const first = h.held()[0].endpoint;
        h.gone(first);
        const kept = h.held().length;
        expect(kept).toBe(h.goneKept ? h.maxReceivers : h.maxReceivers - 1);
        const r = h.add(at(), KEYS, POLICY);
        if (kept === h.maxReceivers) expect(r.ok ? null : r.code).toBe("too_many_receivers");
        else expect(r).toEqual({ ok: true });
      }));

    it("origins: a receiver at one push origin past webpush.max_push_origins_per_topic is refused too_many_origins; one at a held origin (any subdomain) is taken", () =>
      withRegistry((h) => {
        const max = WEBPUSH_LIMITS.max_push_origins_per_topic;
        for (let i = 0; i < max; i++) expect(h.add(at(`https://push${i}.example${i}.com`), KEYS, POLICY)).toEqual({ ok: true });
        const r = h.add(at("https://push.elsewhere.example"), KEYS, POLICY);
        expect(r.ok ? null : r.code).toBe("too_many_origins");
        expect(h.add(at("https://other.example0.com"), KEYS, POLICY)).toEqual({ ok: true });
        expect(h.held()).toHaveLength(max + 1);
      }));

    it("origins: a receiver restored (admitted once already) is held to them too", () =>
      withRegistry((h) => {
        const max = WEBPUSH_LIMITS.max_push_origins_per_topic;
        for (let i = 0; i < max; i++) expect(h.add(at(`https://push${i}.example${i}.com`), KEYS, POLICY)).toEqual({ ok: true });
        const r = h.add(at("https://push.elsewhere.example"), KEYS, null);
        expect(r.ok ? null : r.code).toBe("too_many_origins");
      }));

    it("origins: a receiver its push service called gone does not count toward the push origins", () =>
      withRegistry((h) => {
        const max = WEBPUSH_LIMITS.max_push_origins_per_topic;
        const first = at("https://push.gone.example");
        expect(h.add(first, KEYS, POLICY)).toEqual({ ok: true });
        for (let i = 1; i < max; i++) expect(h.add(at(`https://push${i}.example${i}.com`), KEYS, POLICY)).toEqual({ ok: true });
        expect(h.add(at("https://push.new.example"), KEYS, POLICY).ok).toBe(false);
        h.gone(first);
        expect(h.add(at("https://push.new.example"), KEYS, POLICY)).toEqual({ ok: true });
      }));
  });
}
