// What an object costs to run, counted the way Cloudflare bills a Durable Object: every entry into
// it (its alarm, an RPC call, a fetch, a socket message or close: each a billed request) by cause,
// and the SQLite rows its queries read and wrote (the cursors' rowsRead / rowsWritten). The counts
// ride with the object's stats report (stats-reporter.ts), which an entry schedules anyway: counting
// adds no wake of its own, and an idle object (sockets that only ping, answered by the runtime)
// counts nothing and reports nothing. The relay-wide figures are /metrics' object_wakes_total and
// sqlite_rows_read_total / sqlite_rows_written_total (docs/operating.md).
//
// Entries are counted at the class's prototype methods: the runtime's entry points by name, every
// other method called from outside the object (RPC) as "rpc". A method the object calls on itself
// runs inside its entry's async context (AsyncLocalStorage) and is not counted again. The end of
// an entry (its promise settled) is told too, and whether it was a socket's close: an object that
// holds no storage runs its deferred work then (deferred.ts), as it may set no alarm.
import { AsyncLocalStorage } from "node:async_hooks";
import type { Usage, UsageMetric, WakeCause } from "../../server/stats";

const ENTRY_POINTS: Record<string, WakeCause> = {
  fetch: "fetch",
  alarm: "alarm",
  webSocketMessage: "socket_message",
  webSocketClose: "socket_message",
  webSocketError: "socket_message",
};

/** Set while an entry into an object runs (and in everything it awaits or schedules). */
const entered = new AsyncLocalStorage<true>();
const counted = new WeakSet<object>();

interface Counted {
  readonly objectUsage?: ObjectUsage;
}

/**
 * Counts the entries into objects of the class whose prototype is `proto` (and its bases, up to
 * `stop`): each prototype's methods are wrapped once.
 */
export function countEntries(proto: object, stop: object): void {
  for (let p: object | null = proto; p !== null && p !== stop; p = Object.getPrototypeOf(p)) {
    if (counted.has(p)) continue;
    counted.add(p);
    for (const key of Object.getOwnPropertyNames(p)) {
      if (key === "constructor") continue;
      const d = Object.getOwnPropertyDescriptor(p, key);
      if (!d || typeof d.value !== "function") continue;
      const original = d.value as (...args: unknown[]) => unknown;
      const cause = ENTRY_POINTS[key] ?? "rpc";
      Object.defineProperty(p, key, {
        ...d,
        value: function (this: Counted, ...args: unknown[]) {
          if (entered.getStore()) return original.apply(this, args);
          this.objectUsage?.entered(cause);
          const r = entered.run(true, () => original.apply(this, args));
          const closing = key === "webSocketClose" || key === "webSocketError";
          if (r instanceof Promise) return r.finally(() => this.objectUsage?.exited(closing));
          this.objectUsage?.exited(closing);
          return r;
        },
      });
    }
  }
}

/**
 * Runs `fn` as part of the entry that set it up: a timer's callback (a report, an auth timeout)
 * is the object's own work, not a call from outside, so the methods it calls are not counted.
 */
export function asEntered<T>(fn: () => T): T {
  return entered.run(true, fn);
}

/** The cursors kept before their rows are added up (they are read by then); past it, the older half is added up at once. */
const CURSORS_KEPT = 256;

/** One object's usage since its last report. */
export class ObjectUsage {
  private counts: Usage = {};
  private cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];

  /** The object's class (what /metrics labels it with): letters only, as the report's rule wants. */
  readonly className: string;

  constructor(
    className: string,
    sql: SqlStorage,
    /** An entry was counted: the report that carries it is scheduled (an alarm's entry is reported by the alarm's own run). */
    private readonly onEntry: () => void,
    /** An entry ended (its promise settled; `closing`: a socket's close): deferred work may run now (base/deferred.ts). */
    private readonly onExit: (closing: boolean) => void = () => {},
  ) {
    const letters = className.replace(/[^A-Za-z]/g, "").slice(0, 40);
    this.className = /^[A-Z]/.test(letters) ? letters : "Object";
    const exec = sql.exec.bind(sql);
    Object.defineProperty(sql, "exec", {
      configurable: true,
      value: (query: string, ...bindings: unknown[]) => {
        const cursor = exec(query, ...bindings);
        this.cursors.push(cursor);
        if (this.cursors.length > CURSORS_KEPT) this.addRows(CURSORS_KEPT / 2);
        return cursor;
      },
    });
  }

  entered(cause: WakeCause): void {
    this.add(cause, 1);
    if (cause !== "alarm") this.onEntry();
  }

  /** An entry ended; `closing`: it was a socket's close (the object may have nothing left to keep it). */
  exited(closing = false): void {
    this.onExit(closing);
  }

  /** The usage since the last call (rows of every query made so far), and counting starts again. */
  take(): Usage {
    this.addRows(this.cursors.length);
    const out = this.counts;
    this.counts = {};
    return out;
  }

  /** A report that carried `u` failed: it goes with the next one. */
  giveBack(u: Usage): void {
    for (const [k, n] of Object.entries(u)) this.add(k as UsageMetric, n);
  }

  private add(metric: UsageMetric, n: number): void {
    if (n > 0) this.counts[metric] = (this.counts[metric] ?? 0) + n;
  }

  private addRows(n: number): void {
    for (const c of this.cursors.splice(0, n)) {
      this.add("rows_read", c.rowsRead);
      this.add("rows_written", c.rowsWritten);
    }
  }
}
