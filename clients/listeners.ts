// An app's event listener that throws (or returns a promise that rejects) must not become an
// uncaught exception or an unhandled rejection inside the client: in Node either ends the
// process. Every client calls listeners through here; a failure is reported on the console with
// the event's name, and the client carries on as if the listener had returned normally.

export function reportListenerError(event: string, err: unknown): void {
  console.error(`edge-relay: a "${event}" listener failed`, err);
}

/** Calls a listener; a throw is reported, a returned promise's rejection too (it is not awaited). */
export function callListener<A extends unknown[]>(event: string, fn: (...args: A) => unknown, ...args: A): unknown {
  try {
    const r = fn(...args);
    if (r instanceof Promise) r.catch((err: unknown) => reportListenerError(event, err));
    return r;
  } catch (err) {
    reportListenerError(event, err);
    return undefined;
  }
}

/** Calls a listener and waits for it; a throw or rejection is reported and answers undefined. */
export async function awaitListener<A extends unknown[]>(event: string, fn: (...args: A) => unknown, ...args: A): Promise<unknown> {
  try {
    return await fn(...args);
  } catch (err) {
    reportListenerError(event, err);
    return undefined;
  }
}
