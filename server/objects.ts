// Reaching a Durable Object: the one module that names an object (idFromName) and the one rule for
// retrying a call to it. The Worker and the objects both reach each other through here.
//
// The retry rule (the runtime's own advice): a call whose error the runtime marks retryable
// (`err.retryable === true`, a transient failure: the object was reset or moved) is tried again on a
// fresh stub, with a short growing wait, when the call is idempotent (doing it twice leaves what
// doing it once does: reads, deletes, a ban). Never when the object is overloaded (`err.overloaded`):
// more calls only deepen its queue; the Worker answers those 503 `unavailable` with Retry-After
// (workers/out-of-resources.ts). A call that is not idempotent (a post, an append, a claim) is made
// once: a retry could store it twice. Which methods are idempotent is declared below, per object.
import { COMMON_LIMITS } from "../shared/limits";

/** The bindings of Env that are Durable Object namespaces. */
type ObjectBinding = { [K in keyof Env]-?: Env[K] extends DurableObjectNamespace<infer _> ? K : never }[keyof Env];
type ClassOf<B extends ObjectBinding> = B extends ObjectBinding ? (Env[B] extends DurableObjectNamespace<infer T> ? T : never) : never;
/** The stub of binding B's objects. */
type StubOf<B extends ObjectBinding> = DurableObjectStub<ClassOf<B>>;
type Method<B extends ObjectBinding> = Extract<keyof StubOf<B>, string>;

/**
 * The calls of each object that are idempotent, so retried on a retryable error. Everything not
 * named here is called once. `fetch` of the socket objects is a WebSocket upgrade (a GET without a
 * body): one that failed left no socket behind.
 */
const IDEMPOTENT: { [B in ObjectBinding]: ReadonlyArray<Method<B>> } = {
  TALLY_USER: ["fetch", "ban", "unban"],
  PASSNOTE_ROOM: ["fetch"],
  MINCA_ROOM: ["fetch"],
  MINCA_MAILBOX: ["page", "item", "removeReceiver", "purge"],
  MINCA_ACCOUNT: ["status", "purge", "linksFor", "revokedAmong"],
  MINCA_SPACE: ["page"],
  RELAY_KEYS: ["vapidPrivateKey", "hostPrivateKey"],
  RELAY_STATS: ["snapshot", "storage"],
  RELAY_LEDGER: ["largest", "snapshot"],
  RELAY_POLICY: ["snapshot", "add", "remove"],
  PUSH_GATE: [],
};

/** Whether a failed call may be tried again: the runtime says so, and the object is not overloaded. */
function retryable(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const e = err as { retryable?: unknown; overloaded?: unknown };
  return e.retryable === true && e.overloaded !== true;
}

/** Whether the runtime says the object is overloaded (too many calls queued at it). */
export function overloaded(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { overloaded?: unknown }).overloaded === true;
}

/** The wait before try `n + 1` (n ≥ 1): the base doubled each time, with jitter (half to all of it). */
function retryWaitMs(n: number, random: () => number = Math.random): number {
  const full = COMMON_LIMITS.object_retry_wait_ms * 2 ** (n - 1);
  return Math.round(full / 2 + (random() * full) / 2);
}

/** The id of binding B's object named `name` (for a caller that keeps ids, or notes them). */
export function objectId<B extends ObjectBinding>(env: Pick<Env, B>, binding: B, name: string): DurableObjectId {
  return (env[binding] as unknown as DurableObjectNamespace).idFromName(name);
}

/**
 * Binding B's object named `name`, as a stub whose calls follow the retry rule above. The stub is
 * made when called (each try gets a fresh one: a stub that saw a retryable error may be broken).
 */
export function objectOf<B extends ObjectBinding>(env: Pick<Env, B>, binding: B, name: string): StubOf<B> {
  return objectAt(env, binding, objectId(env, binding, name));
}

/** Binding B's object of id `id` (an id kept or noted earlier), with the same retry rule. */
export function objectAt<B extends ObjectBinding>(env: Pick<Env, B>, binding: B, id: DurableObjectId): StubOf<B> {
  const ns = env[binding] as unknown as DurableObjectNamespace;
  const idempotent = new Set<string>(IDEMPOTENT[binding]);
  const fresh = () => ns.get(id) as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  return new Proxy(Object.create(null) as object, {
    get(_, prop) {
      // Not a thenable (an `await` of the stub itself must not call the object).
      if (typeof prop !== "string" || prop === "then") return undefined;
      if (prop === "id") return id;
      if (prop === "name") return id.name;
      return (...args: unknown[]) => call(fresh, (stub) => stub[prop](...args), idempotent.has(prop));
    },
  }) as StubOf<B>;
}

async function call<S, T>(fresh: () => S, f: (stub: S) => Promise<T>, idempotent: boolean): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await f(fresh());
    } catch (err) {
      if (!idempotent || !retryable(err) || n >= COMMON_LIMITS.object_call_tries) throw err;
      await new Promise((resolve) => setTimeout(resolve, retryWaitMs(n)));
    }
  }
}
