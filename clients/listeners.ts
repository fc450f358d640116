// An app's event listeners, the one module of the SDK for them: the listeners by event name,
// typed by an events map (`Listeners`: `on` adds one and returns its removal, `of` lists an
// event's listeners in the order added), and how a client calls one. How they are called (at
// once, awaited) is the client's choice: the Tally client awaits each, the Passnote engine calls
// them in turn. Either way, a listener that throws (or returns a promise that rejects) must not
// become an uncaught exception or an unhandled rejection inside the client: in Node either ends
// the process. A failure is reported on the console with the event's name, and the client
// carries on as if the listener had returned normally.

// biome-ignore lint/suspicious/noExplicitAny: a listener's parameters are whatever its event map says
export type AnyListener = (...args: any[]) => unknown;

export class Listeners<E extends { [K in keyof E]: AnyListener }> {
  private readonly byEvent = new Map<keyof E, Set<AnyListener>>();

  on<K extends keyof E>(event: K, fn: E[K]): () => void {
    let set = this.byEvent.get(event);
    if (!set) {
      set = new Set();
      this.byEvent.set(event, set);
    }
    set.add(fn);
    return () => void set.delete(fn);
  }

  of<K extends keyof E>(event: K): Iterable<E[K]> {
    return (this.byEvent.get(event) ?? []) as Iterable<E[K]>;
  }
}

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
