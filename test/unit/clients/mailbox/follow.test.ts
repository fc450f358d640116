// MailboxClient.follow against a relay that goes away and comes back. The relay's answers are
// scripted through the client's `fetch` option (a network error cannot be had from a real relay
// on demand); the real relay is test/e2e/minca-mailbox.test.ts.
import { describe, expect, it, vi } from "vitest";
import { MailboxClient, MailboxError } from "../../../../clients/mailbox/client";
import { retryAfterSeconds } from "../../../../clients/mailbox/client";
import { base64urlEncode } from "../../../../shared/encoding";

const topic = "follow-test-topic-0001";
const page = (items: Array<{ seq: number; text: string }>, next: number) =>
  new Response(
    JSON.stringify({
      items: items.map((i) => ({ seq: i.seq, at: 1, until: 2, blob: base64urlEncode(new TextEncoder().encode(i.text)) })),
      next,
      more: false,
      oldest_seq: items[0]?.seq ?? null,
    }),
    { status: 200, headers: { "content-type": "application/json" } },
  );
const error = (status: number, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ error: { code: status === 429 ? "rate_limited" : "unavailable", message: "x" } }), { status, headers });

/** A fetch answering from a script, one entry per request; past its end it waits for the abort. */
function scripted(script: Array<() => Response>) {
  let i = 0;
  const fetch = async (_url: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const step = script[i++];
    if (step) return step();
    return new Promise((_r, reject) => init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError"))));
  };
  return { fetch: fetch as typeof globalThis.fetch, calls: () => i };
}

describe("MailboxClient.follow", () => {
  it("survives a network error and 5xx answers: it waits, asks again, and yields the items in order", async () => {
    const relay = scripted([
      () => page([{ seq: 1, text: "one" }], 1),
      () => {
        throw new TypeError("fetch failed");
      },
      () => error(503),
      () => error(500),
      () => page([{ seq: 2, text: "two" }], 2),
    ]);
    const client = new MailboxClient({ relayUrl: "relay.example", fetch: relay.fetch });
    const ac = new AbortController();
    const got: string[] = [];
    for await (const item of client.follow(topic, { signal: ac.signal, retryDelayMs: 1 })) {
      got.push(new TextDecoder().decode(item.blob));
      if (got.length === 2) ac.abort();
    }
    expect(got).toEqual(["one", "two"]);
    expect(relay.calls()).toBe(5);
  });

  it("a refusal that is not the relay being away (404, 400) ends it with the MailboxError", async () => {
    const relay = scripted([() => error(404)]);
    const client = new MailboxClient({ relayUrl: "relay.example", fetch: relay.fetch });
    const run = async () => {
      for await (const _ of client.follow(topic, { retryDelayMs: 1 })) void _;
    };
    await expect(run()).rejects.toMatchObject({ status: 404 });
  });

  it("its 429 wait (Retry-After: one hour) ends as soon as the AbortSignal aborts", async () => {
    const relay = scripted([() => error(429, { "retry-after": "3600" })]);
    const client = new MailboxClient({ relayUrl: "relay.example", fetch: relay.fetch });
    const ac = new AbortController();
    const run = (async () => {
      for await (const _ of client.follow(topic, { signal: ac.signal })) void _;
      return "ended";
    })();
    while (relay.calls() < 1) await new Promise((r) => setTimeout(r, 1));
    await new Promise((r) => setTimeout(r, 50)); // let it read the 429 and start waiting
    ac.abort();
    expect(await run).toBe("ended"); // without the abort it would wait an hour (the test would time out)
  });
});

describe("MailboxClient.follow on a topic a host answers with links only", () => {
  it("yields each link once and backs off (1 s doubling) while next stays 0, instead of asking again at once", async () => {
    vi.useFakeTimers();
    try {
      const links = () =>
        page(
          [
            { seq: 0, text: "link a" },
            { seq: 0, text: "link b" },
          ],
          0,
        );
      const relay = scripted([
        links,
        links,
        links,
        links,
        () =>
          page(
            [
              { seq: 0, text: "link a" },
              { seq: 1, text: "item" },
            ],
            1,
          ),
      ]);
      const client = new MailboxClient({ relayUrl: "relay.example", fetch: relay.fetch });
      const ac = new AbortController();
      const got: string[] = [];
      const run = (async () => {
        for await (const item of client.follow(topic, { signal: ac.signal })) got.push(new TextDecoder().decode(item.blob));
      })();
      await vi.advanceTimersByTimeAsync(0);
      expect(relay.calls()).toBe(1);
      expect(got).toEqual(["link a", "link b"]);
      await vi.advanceTimersByTimeAsync(999);
      expect(relay.calls()).toBe(1); // before: about 20 requests a second
      await vi.advanceTimersByTimeAsync(1);
      expect(relay.calls()).toBe(2);
      await vi.advanceTimersByTimeAsync(2_000); // then 2 s
      expect(relay.calls()).toBe(3);
      await vi.advanceTimersByTimeAsync(4_000 + 8_000);
      expect(relay.calls()).toBe(6); // the item moved next past 0: it long-polls again at once, as it should
      expect(got).toEqual(["link a", "link b", "item"]);
      ac.abort();
      await run;
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("Retry-After", () => {
  it("as delay-seconds, and as an HTTP date (the seconds until it; 0 once past)", () => {
    const now = Date.parse("2026-12-02T16:00:00Z");
    expect(retryAfterSeconds("120", now)).toBe(120);
    expect(retryAfterSeconds("Wed, 02 Dec 2026 16:01:30 GMT", now)).toBe(90);
    expect(retryAfterSeconds("Wed, 02 Dec 2026 15:00:00 GMT", now)).toBe(0);
    expect(retryAfterSeconds("soon", now)).toBeUndefined();
    expect(retryAfterSeconds(null, now)).toBeUndefined();
  });
  it("a 429 with an HTTP date reaches the app as seconds on the MailboxError", async () => {
    const at = new Date(Date.now() + 60_000).toUTCString();
    const client = new MailboxClient({
      relayUrl: "https://relay.example",
      fetch: scripted([() => error(429, { "retry-after": at })]).fetch,
    });
    const err = (await client.page(topic).catch((e) => e)) as MailboxError;
    expect(err).toBeInstanceOf(MailboxError);
    expect(err.retryAfter).toBeGreaterThanOrEqual(58);
    expect(err.retryAfter).toBeLessThanOrEqual(61);
  });
});
