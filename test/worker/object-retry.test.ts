// Reaching objects (server/objects.ts): an idempotent call whose error the runtime marks retryable
// is tried again on a fresh stub; a call that stores something is made once; an overloaded object
// is answered 503 `unavailable` with Retry-After, never 500. The Worker runs as production's, with
// the mailbox namespace wrapped so that its first stubs throw the runtime's kinds of error before
// the real object answers.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { app } from "../../workers/app";
import { COMMON_LIMITS } from "../../shared/limits";

const BASE = "http://relay.test/minca/v1/mailbox";
let n = 0;
const newTopic = () => `object-retry-topic-${Date.now()}-${++n}`;

/** An error as the runtime throws it for a failed call to an object. */
function runtimeError(message: string, flags: { retryable?: boolean; overloaded?: boolean }): Error {
  return Object.assign(new Error(message), flags);
}

/**
 * The mailbox namespace whose stubs throw `errors` (one per call, in order) before the real
 * object's stub is handed out; `calls` counts every call made on a stub.
 */
function failingMailboxes(errors: Error[]) {
  const real = env.MINCA_MAILBOX;
  const seen = { calls: 0 };
  const ns = {
    idFromName: (name: string) => real.idFromName(name),
    get: (id: DurableObjectId) => {
      const stub = real.get(id);
      return new Proxy(stub, {
        get(target, prop) {
          const methods = target as unknown as Record<string | symbol, (...a: unknown[]) => unknown>;
          if (typeof prop !== "string" || prop === "id" || prop === "name") return Reflect.get(target, prop);
          return (...args: unknown[]) => {
            seen.calls++;
            const err = errors.shift();
            if (err) return Promise.reject(err);
            return methods[prop](...args);
          };
        },
      });
    },
  };
  return { env: { ...env, MINCA_MAILBOX: ns as unknown as Env["MINCA_MAILBOX"] }, seen };
}

async function send(e: Env, path: string, init?: RequestInit): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(`${BASE}/${path}`, init), e, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

describe("reaching objects", () => {
  it("an idempotent call (a mailbox page) whose error is retryable is tried again, and answers", async () => {
    const topic = newTopic();
    const failing = failingMailboxes([runtimeError("Network connection lost.", { retryable: true })]);
    const res = await send(failing.env, topic);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { items: unknown[] }).items).toEqual([]);
    expect(failing.seen.calls).toBe(2);
  });

  it("a call that stores something (a mailbox post) is made once, retryable error or not", async () => {
    const topic = newTopic();
    const failing = failingMailboxes([runtimeError("Network connection lost.", { retryable: true })]);
    const res = await send(failing.env, topic, { method: "POST", body: "hello" });
    expect(res.status).toBe(500);
    expect(failing.seen.calls).toBe(1);
    // Nothing was stored by a second try.
    const page = await send(env, topic);
    expect(((await page.json()) as { items: unknown[] }).items).toEqual([]);
  });

  it("a retryable error is tried at most object_call_tries times", async () => {
    const tries = COMMON_LIMITS.object_call_tries;
    const errors = Array.from({ length: tries }, () => runtimeError("Network connection lost.", { retryable: true }));
    const failing = failingMailboxes(errors);
    const res = await send(failing.env, newTopic());
    expect(res.status).toBe(500);
    expect(failing.seen.calls).toBe(tries);
  });

  it("an overloaded object is answered 503 unavailable with Retry-After, never 500, and not tried again", async () => {
    const failing = failingMailboxes([runtimeError("too many requests queued", { retryable: true, overloaded: true })]);
    const res = await send(failing.env, newTopic());
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe(String(COMMON_LIMITS.unavailable_retry_seconds));
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("unavailable");
    expect(failing.seen.calls).toBe(1);
  });
});
