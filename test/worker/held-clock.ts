// The clock a test object's rate limits and parked sockets' grace read (`frozenAt` of the test
// subclasses, test/worker/test-objects.ts), held and moved by a test instead of waited for.
import { runInDurableObject } from "cloudflare:test";
import { COMMON_LIMITS } from "../../shared/limits";
import type { TestTallyUser } from "./test-objects";

/** Any object whose test subclass has `frozenAt` (Tally user, Passnote room, Minca code room). */
type AnyStub = DurableObjectStub<TestTallyUser> | DurableObjectStub;

/** Holds `stub`'s clock at `at` (undefined: the real clock again). */
export async function holdClock(stub: AnyStub, at: number | undefined): Promise<void> {
  // every object passed here has `frozenAt`, as TestTallyUser
  await runInDurableObject(stub as DurableObjectStub<TestTallyUser>, (inst: TestTallyUser) => {
    inst.frozenAt = at;
  });
}

/**
 * A held clock on `stub`, starting now, that each call moves on by `ms` (by default a parked
 * socket's grace: every socket opened before is then past it) and holds there.
 */
export function steppingClock(stub: AnyStub): (ms?: number) => Promise<number> {
  let at = Date.now();
  return async (ms = COMMON_LIMITS.unauthenticated_grace_ms) => {
    at += ms;
    await holdClock(stub, at);
    return at;
  };
}
