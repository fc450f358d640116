// Listeners by event name, typed by an events map: `on` adds one and returns its removal, `of`
// lists an event's listeners in the order added. How they are called (at once, awaited, with
// errors reported) is the user's choice: the Tally client awaits each, the Passnote engine calls
// them in turn.

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
