// The mailbox client apps use (docs/mailbox.md): post items, read pages, follow a topic by
// long-poll, and register a browser PushSubscription for wakes. Runs wherever fetch does.
import { base64urlDecode, base64urlEncode } from "../../shared/encoding";
import { MAILBOX_LIMITS } from "../../shared/limits";
import { isTopic } from "../../shared/mailbox/topic";
import type { Page } from "../../shared/mailbox/messages";
import { relayBase } from "../relay-url";
import { parseRetryAfter } from "../../shared/retry-after";

export interface MailboxItem {
  seq: number;
  at: number;
  until: number;
  blob: Uint8Array;
}

export interface MailboxPage {
  items: MailboxItem[];
  next: number;
  more: boolean;
  oldestSeq: number | null;
  /** True when items between `after` and the oldest held one were lost to expiry or eviction. */
  gap: boolean;
}

export class MailboxError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Seconds to wait, on 429. */
    readonly retryAfter?: number,
  ) {
    super(message);
  }
}

export interface MailboxClientOptions {
  /** The relay: https://relay.example, wss://relay.example or a bare host (clients/relay-url.ts). */
  relayUrl: string;
  fetch?: typeof fetch;
}

export class MailboxClient {
  private readonly base: string;
  private readonly fetchFn: typeof fetch;

  constructor(opts: MailboxClientOptions) {
    this.base = `${relayBase(opts.relayUrl, "http")}/minca/v1/mailbox`;
    this.fetchFn = opts.fetch ?? ((input, init) => fetch(input, init));
  }

  private url(topic: string, rest = ""): string {
    if (!isTopic(topic)) throw new RangeError("topic must be 16-128 characters of [A-Za-z0-9_-]");
    return `${this.base}/${topic}${rest}`;
  }

  private async call(url: string, init?: RequestInit): Promise<Response> {
    const res = await this.fetchFn(url, init);
    if (res.ok) return res;
    let code = "http_error";
    let message = `HTTP ${res.status}`;
    try {
      const body = (await res.json()) as { error?: { code?: string; message?: string } };
      code = body.error?.code ?? code;
      message = body.error?.message ?? message;
    } catch {
      // not JSON
    }
    throw new MailboxError(res.status, code, message, retryAfterSeconds(res.headers.get("retry-after")));
  }

  /** Stores one item; `until` in unix seconds (default: 30 days ahead). */
  async post(topic: string, blob: Uint8Array, opts: { until?: number } = {}): Promise<{ seq: number; until: number }> {
    const q = opts.until === undefined ? "" : `?until=${opts.until}`;
    const res = await this.call(this.url(topic, q), {
      method: "POST",
      body: blob as Uint8Array<ArrayBuffer>,
      headers: { "content-type": "application/octet-stream" },
    });
    return (await res.json()) as { seq: number; until: number };
  }

  /** One page of items after `after`; with `wait` (seconds), waits for one to arrive. */
  async page(topic: string, opts: { after?: number; limit?: number; wait?: number; signal?: AbortSignal } = {}): Promise<MailboxPage> {
    const after = opts.after ?? 0;
    const q = new URLSearchParams({ after: String(after) });
    if (opts.limit !== undefined) q.set("limit", String(opts.limit));
    if (opts.wait !== undefined) q.set("wait", String(Math.min(opts.wait, MAILBOX_LIMITS.max_wait_seconds)));
    const res = await this.call(this.url(topic, `?${q}`), { signal: opts.signal });
    const p = (await res.json()) as Page;
    return {
      items: p.items.map((i) => ({ seq: i.seq, at: i.at, until: i.until, blob: base64urlDecode(i.blob) })),
      next: p.next,
      more: p.more,
      oldestSeq: p.oldest_seq,
      gap: p.oldest_seq !== null && p.oldest_seq > after + 1,
    };
  }

  /**
   * Follows a topic from `after`: yields every item in order, long-polling while there is
   * nothing new, until the signal aborts. It outlasts a relay that is away: on a network error or
   * a 5xx it waits and asks again, doubling the wait from `retryDelayMs` (default 1 s) up to 30 s;
   * on 429 it waits as Retry-After says. Every wait ends early when the signal aborts. Other
   * refusals (a bad topic, 4xx) end it with the MailboxError.
   */
  async *follow(
    topic: string,
    opts: { after?: number; wait?: number; signal?: AbortSignal; retryDelayMs?: number } = {},
  ): AsyncGenerator<MailboxItem> {
    let after = opts.after ?? 0;
    const wait = opts.wait ?? MAILBOX_LIMITS.max_wait_seconds;
    const firstDelay = opts.retryDelayMs ?? 1000;
    let delay = firstDelay;
    // A host's links (seq 0, docs/hosting.md) come on every first page (after 0): each is yielded once,
    // and while a page holds nothing but links (next stays 0, so the relay answers at once and
    // never long-polls), the next ask waits, 1 s doubling to 30 s, instead of looping.
    const seenLinks = new Set<string>();
    let linkDelay = firstDelay;
    while (!opts.signal?.aborted) {
      let p: MailboxPage;
      try {
        p = await this.page(topic, { after, wait, signal: opts.signal });
      } catch (err) {
        if (opts.signal?.aborted) return;
        if (err instanceof MailboxError && err.status === 429) {
          await sleep(err.retryAfter === undefined ? delay : err.retryAfter * 1000, opts.signal);
          continue;
        }
        const away = !(err instanceof MailboxError) || err.status >= 500; // fetch failed, or the relay did
        if (!away || err instanceof RangeError) throw err;
        await sleep(delay, opts.signal);
        delay = Math.min(delay * 2, FOLLOW_MAX_DELAY_MS);
        continue;
      }
      delay = firstDelay;
      for (const item of p.items) {
        if (item.seq === 0) {
          const key = `${item.until} ${base64urlEncode(item.blob)}`;
          if (seenLinks.has(key)) continue;
          seenLinks.add(key);
        }
        yield item;
      }
      const linksOnly = p.items.length > 0 && p.items.every((i) => i.seq === 0) && p.next === after;
      after = p.next;
      if (linksOnly) {
        await sleep(linkDelay, opts.signal);
        linkDelay = Math.min(linkDelay * 2, FOLLOW_MAX_DELAY_MS);
      } else {
        linkDelay = firstDelay;
      }
    }
  }

  /** Registers a browser PushSubscription (its toJSON()) for wakes; answers the receiver id. */
  async addReceiver(topic: string, subscription: { endpoint: string; keys: { p256dh: string; auth: string } }): Promise<string> {
    const res = await this.call(this.url(topic, "/receivers"), {
      method: "POST",
      body: JSON.stringify(subscription),
      headers: { "content-type": "application/json" },
    });
    return ((await res.json()) as { id: string }).id;
  }

  async removeReceiver(topic: string, id: string): Promise<void> {
    await this.call(this.url(topic, `/receivers/${encodeURIComponent(id)}`), { method: "DELETE" });
  }
}

/** The longest follow() waits between tries while the relay is away. */
const FOLLOW_MAX_DELAY_MS = 30_000;

/** Retry-After (RFC 9110 section 10.2.3): delay-seconds, or an HTTP date; undefined when neither. */
export function retryAfterSeconds(value: string | null, nowMs = Date.now()): number | undefined {
  return parseRetryAfter(value, nowMs);
}

/** Waits `ms`, or less when the signal aborts first. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
