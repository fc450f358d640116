// The push outbox's contract (durable-objects/push/push-outbox.ts): one suite that every store of
// pushes runs (a mailbox's wakes, a hosted account's pushes), so that they all follow one set of
// rules. A store brings a harness: its OutboxStore and a way to queue a push and look at what it
// holds. The suite drives the outbox with an injected sender, gate, rule and clock: no network, no
// sleeping.
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  PushOutbox,
  type OutboxDeps,
  type OutboxPush,
  type OutboxRules,
  type OutboxStore,
  type PushSender,
} from "../../durable-objects/push/push-outbox";
import type { PushOutcome } from "../../server/webpush/send";
import { WEBPUSH_LIMITS } from "../../shared/limits";
import { waitFor } from "../helpers/wait";

export interface OutboxHarness<P extends OutboxPush> {
  store: OutboxStore<P>;
  /** Queues one push, due now, to a receiver at `endpoint` (made when new). */
  queue(endpoint: string): void;
  /** The pushes still queued, by endpoint, with their tries and next time. */
  pending(): Array<{ endpoint: string; attempts: number; nextAt: number }>;
  /** Whether the receiver at `endpoint` is still one that new pushes go to. */
  receiverLive(endpoint: string): boolean;
}

/** Runs `f` with a fresh harness (inside the store's object, when the store needs one). */
export type WithHarness<P extends OutboxPush> = (f: (h: OutboxHarness<P>) => Promise<void>) => Promise<void>;

const RULES: OutboxRules = { what: "contract", maxAttempts: 3, retry: { baseSeconds: 10, maxSeconds: 100, retryAfterMaxSeconds: 1000 } };

let n = 0;
const endpoint = (origin = "https://push.example") => `${origin}/sub/${Date.now()}-${++n}`;

/** An outbox with a sender answering `answers` in turn (status codes), a gate that admits all, and a fixed clock. */
function outbox<P extends OutboxPush>(
  store: OutboxStore<P>,
  answers: Array<PushOutcome | "hang">,
  over: Partial<OutboxDeps> = {},
  rules: OutboxRules = RULES,
) {
  const sent: string[] = [];
  let now = 1_000_000;
  const sender: PushSender = {
    send: async (target) => {
      sent.push(target.endpoint);
      const a = answers.shift() ?? { kind: "delivered", status: 201 };
      if (a === "hang") return new Promise<PushOutcome>(() => {});
      return a;
    },
  };
  const delivered = vi.fn();
  const box = new PushOutbox(store, rules, {
    sender: async () => sender,
    admit: async (items) => ({ go: items, wait: [] }),
    policy: () => ({ allow: [], ownHosts: [] }),
    delivered,
    now: () => now,
    ...over,
  });
  return { box, sent, delivered, advance: (ms: number) => (now += ms), now: () => now };
}

// The relay writes every level to standard output (console.log), one JSON line each.
const lines = (spy: { mock: { calls: unknown[][] } }) => spy.mock.calls.map((c) => String(c[0]));

export function pushOutboxContract<P extends OutboxPush>(name: string, withHarness: WithHarness<P>): void {
  describe(`push outbox contract: ${name}`, () => {
    afterEach(() => vi.restoreAllMocks());

    it("2xx: the push is delivered once, counted, and leaves the outbox; the receiver stays", () =>
      withHarness(async (h) => {
        const e = endpoint();
        h.queue(e);
        const o = outbox(h.store, [{ kind: "delivered", status: 201 }]);
        await o.box.sendDue();
        expect(o.sent).toEqual([e]);
        expect(o.delivered).toHaveBeenCalledTimes(1);
        expect(h.pending()).toEqual([]);
        expect(h.receiverLive(e)).toBe(true);
        await o.box.sendDue();
        expect(o.sent).toEqual([e]);
      }));

    it("404/410: the receiver is gone: none of its pushes is left, and new pushes do not go to it", () =>
      withHarness(async (h) => {
        const e = endpoint();
        h.queue(e);
        h.queue(e);
        const o = outbox(h.store, [
          { kind: "gone", status: 410 },
          { kind: "gone", status: 410 },
        ]);
        await o.box.sendDue();
        expect(h.pending()).toEqual([]);
        expect(h.receiverLive(e)).toBe(false);
      }));

    it("413: dropped (not retried) and logged as a warning naming too large; the receiver stays", () =>
      withHarness(async (h) => {
        const warn = vi.spyOn(console, "log").mockImplementation(() => {});
        const e = endpoint();
        h.queue(e);
        const o = outbox(h.store, [{ kind: "too_large", status: 413 }]);
        await o.box.sendDue();
        expect(h.pending()).toEqual([]);
        expect(h.receiverLive(e)).toBe(true);
        expect(lines(warn).some((l) => /too large/.test(l) && /"level":"warn"/.test(l))).toBe(true);
      }));

    it("other 4xx: dropped (not retried) and logged as an error; the receiver stays", () =>
      withHarness(async (h) => {
        const error = vi.spyOn(console, "log").mockImplementation(() => {});
        const e = endpoint();
        h.queue(e);
        const o = outbox(h.store, [{ kind: "rejected", status: 403, detail: "bad vapid" }]);
        await o.box.sendDue();
        expect(h.pending()).toEqual([]);
        expect(h.receiverLive(e)).toBe(true);
        expect(lines(error).some((l) => /"level":"error"/.test(l) && /403/.test(l))).toBe(true);
      }));

    it("429/5xx: tried again after the backoff or the Retry-After, each try counted; dropped with a warning once the tries are spent", () =>
      withHarness(async (h) => {
        const warn = vi.spyOn(console, "log").mockImplementation(() => {});
        const e = endpoint();
        h.queue(e);
        const o = outbox(h.store, [
          { kind: "retry", status: 503 },
          { kind: "retry", status: 429, retryAfterSeconds: 500 },
          { kind: "retry", status: 500 },
        ]);
        await o.box.sendDue();
        expect(h.pending()).toEqual([{ endpoint: e, attempts: 1, nextAt: o.now() + 10_000 }]);
        await o.box.sendDue(); // not due yet
        expect(o.sent).toHaveLength(1);
        o.advance(10_000);
        await o.box.sendDue();
        expect(h.pending()).toEqual([{ endpoint: e, attempts: 2, nextAt: o.now() + 500_000 }]);
        o.advance(500_000);
        await o.box.sendDue();
        expect(o.sent).toHaveLength(3);
        expect(h.pending()).toEqual([]);
        expect(h.receiverLive(e)).toBe(true);
        expect(lines(warn).some((l) => /after 3 tries/.test(l) && /"level":"warn"/.test(l))).toBe(true);
      }));

    it("a push whose tries get no answer (connection failed, timed out) is dropped after push_max_unanswered_tries tries, not after every try the rules allow", () =>
      withHarness(async (h) => {
        const warn = vi.spyOn(console, "log").mockImplementation(() => {});
        const e = endpoint();
        h.queue(e);
        const unanswered: PushOutcome = { kind: "retry", status: 0, error: "connection refused" };
        const o = outbox(
          h.store,
          Array.from({ length: 8 }, () => unanswered),
          {},
          { ...RULES, maxAttempts: 8 },
        );
        for (let i = 0; i < 8 && h.pending().length > 0; i++) {
          await o.box.sendDue();
          o.advance(1_000_000);
        }
        expect(o.sent).toHaveLength(WEBPUSH_LIMITS.push_max_unanswered_tries);
        expect(h.pending()).toEqual([]);
        expect(h.receiverLive(e)).toBe(true);
        expect(lines(warn).some((l) => /last unanswered/.test(l) && /"level":"warn"/.test(l))).toBe(true);
      }));

    it("each try is counted, and its retry time set, before it is made: a send that never returns leaves it counted", () =>
      withHarness(async (h) => {
        const e = endpoint();
        h.queue(e);
        const o = outbox(h.store, ["hang"]);
        void o.box.sendDue();
        await waitFor(() => o.sent.length === 1 || undefined, { what: "the send started" });
        expect(o.sent).toEqual([e]);
        expect(h.pending()).toEqual([{ endpoint: e, attempts: 1, nextAt: o.now() + 10_000 }]);
      }));

    it("a push tried as often as it may be (the relay went down during each try) is dropped without sending", () =>
      withHarness(async (h) => {
        const e = endpoint();
        h.queue(e);
        for (let i = 0; i < RULES.maxAttempts; i++) {
          const o = outbox(h.store, ["hang"]);
          void o.box.sendDue();
          await waitFor(() => o.sent.length === 1 || undefined, { what: "the send started" });
          h.store.reschedule(h.store.due(Number.MAX_SAFE_INTEGER)[0], i + 1, 0); // due again at once
        }
        const o = outbox(h.store, []);
        await o.box.sendDue();
        expect(o.sent).toEqual([]);
        expect(h.pending()).toEqual([]);
      }));

    it("what the origin's gate holds back waits until the gate's time, costing no try", () =>
      withHarness(async (h) => {
        const e = endpoint();
        h.queue(e);
        const o = outbox(h.store, [], { admit: async (items) => ({ go: [], wait: items.map((item) => ({ item, at: 5_000_000 })) }) });
        await o.box.sendDue();
        expect(o.sent).toEqual([]);
        expect(h.pending()).toEqual([{ endpoint: e, attempts: 0, nextAt: 5_000_000 }]);
      }));

    it("an endpoint the push-endpoint rule refuses is not pushed to: its receiver is gone, with a warning", () =>
      withHarness(async (h) => {
        const warn = vi.spyOn(console, "log").mockImplementation(() => {});
        const e = endpoint("http://10.0.0.1");
        h.queue(e);
        const o = outbox(h.store, []);
        await o.box.sendDue();
        expect(o.sent).toEqual([]);
        expect(h.pending()).toEqual([]);
        expect(h.receiverLive(e)).toBe(false);
        expect(lines(warn).some((l) => /push-endpoint rule/.test(l) && /"level":"warn"/.test(l))).toBe(true);
      }));
  });
}
