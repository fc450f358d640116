// The app's message handlers (the Tally protocol sections 7 and 8.1): `message` listeners, which
// see every application message, and handlers by type with an optional payload schema. Each has
// a key of its own, so that when one fails the ones that had already run are not run again for
// the next copy of the message (their results are kept as marks until the message is processed).
//
// Decision (the receipt's result with several handlers): the handlers that apply to a message run
// in the order they were registered (listeners and typed handlers alike); the receipt's result is
// the first string one of them returned, "processed" when none did. A typed handler whose schema
// refuses the payload is not run; a message that no handler took because every applicable schema
// refused it is answered IGNORED (kept out of the ledger).

/** A zod schema, or anything with zod's safeParse. */
export interface PayloadSchema<T> {
  safeParse(value: unknown): { success: true; data: T } | { success: false; error: unknown };
}

/** One registered handler. `type` undefined: every application message. */
interface HandlerEntry {
  readonly key: string;
  readonly type: string | undefined;
  readonly schema: PayloadSchema<unknown> | undefined;
  readonly fn: (inner: never, via: never) => unknown;
}

/** The results of the handlers that ran on one message, by key (null: no string returned). */
export type HandlerMarks = Record<string, string | null>;

export class HandlerRegistry {
  private readonly entries: HandlerEntry[] = [];
  private seq = 0;

  /**
   * Registers a handler; returns its removal. The key is `name` when given, else the handler's
   * type (or "message") and its registration number: an app that registers its handlers in the
   * same order after a restart gets the same keys.
   */
  add(type: string | undefined, fn: HandlerEntry["fn"], schema?: PayloadSchema<unknown>, name?: string): () => void {
    const key = name ?? `${type ?? "message"}#${this.seq}`;
    this.seq++;
    if (this.entries.some((e) => e.key === key)) throw new Error(`a Tally handler named "${key}" is registered already`);
    const entry: HandlerEntry = { key, type, schema, fn };
    this.entries.push(entry);
    return () => {
      const i = this.entries.indexOf(entry);
      if (i >= 0) this.entries.splice(i, 1);
    };
  }

  /** The handlers that apply to a message of `type`, in registration order. */
  for(type: string): HandlerEntry[] {
    return this.entries.filter((e) => e.type === undefined || e.type === type);
  }
}

/** The receipt's result from the handlers' results in order; `allRefused`: every applicable one's schema refused the payload. */
export function receiptResult(results: unknown[], fallback: string): string {
  return (results.find((r) => typeof r === "string") as string | undefined) ?? fallback;
}
