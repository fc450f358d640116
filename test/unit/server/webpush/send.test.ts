import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  WebPushSender,
  answerForLog,
  classifyPushAnswer,
  readAtMost,
  parseRetryAfter,
  pushTopicSchema,
  retryDelaySeconds,
  type FetchLike,
} from "../../../../server/webpush/send";
import { generateVapidKeys } from "../../../../server/webpush/vapid";
import { pushSubscriptionSchema } from "../../../../shared/webpush/subscription";
import { utf8Encode } from "../../../../shared/encoding";
import { WEBPUSH_LIMITS } from "../../../../shared/limits";
import { nodeDecrypt, nodeSubscription, nodeVerifyVapid } from "../../../helpers/webpush-node";

function senderWith(answer: (url: string, init: RequestInit) => Response | Promise<Response>) {
  const calls: Array<{ url: string; init: RequestInit }> = [];
  const fetch: FetchLike = async (url, init) => {
    calls.push({ url, init });
    return answer(url, init);
  };
  return { sender: new WebPushSender({ keys: generateVapidKeys(), subject: "mailto:ops@example.com", fetch }), calls };
}

describe("RFC 8030 push message requests", () => {
  it("one POST with TTL, Urgency, Topic, aes128gcm body and a VAPID header an independent push service accepts", async () => {
    const sub = nodeSubscription("https://push.example/abc");
    const { sender, calls } = senderWith(() => new Response(null, { status: 201 }));
    const out = await sender.send(sub, utf8Encode("wake"), { ttl: 60, urgency: "high", topic: "abcdefgh" });
    expect(out).toEqual({ kind: "delivered", status: 201 });
    const [{ url, init }] = calls;
    const h = init.headers as Record<string, string>;
    expect(url).toBe("https://push.example/abc");
    expect(init.method).toBe("POST");
    expect(h.TTL).toBe("60");
    expect(h.Urgency).toBe("high");
    expect(h.Topic).toBe("abcdefgh");
    expect(h["Content-Encoding"]).toBe("aes128gcm");
    nodeVerifyVapid(h.Authorization, "https://push.example");
    expect(nodeDecrypt(Buffer.from(init.body as Uint8Array), sub).toString()).toBe("wake");
  });

  it("TTL 0 is allowed; TTL beyond 4 weeks is capped", async () => {
    const sub = nodeSubscription("https://push.example/abc");
    const { sender } = senderWith(() => new Response(null, { status: 201 }));
    expect((sender.buildRequest(sub, utf8Encode("x"), { ttl: 0 }).init.headers as Record<string, string>).TTL).toBe("0");
    expect((sender.buildRequest(sub, utf8Encode("x"), { ttl: 10 ** 9 }).init.headers as Record<string, string>).TTL).toBe("2419200");
    expect(() => sender.buildRequest(sub, utf8Encode("x"), { ttl: -1 })).toThrow(RangeError);
  });

  it("Topic: at most 32 base64url characters, of a length that decodes", () => {
    expect(pushTopicSchema.safeParse("A".repeat(32)).success).toBe(true);
    expect(pushTopicSchema.safeParse("A".repeat(33)).success).toBe(false);
    expect(pushTopicSchema.safeParse("A".repeat(5)).success).toBe(false);
    expect(pushTopicSchema.safeParse("a+b/").success).toBe(false);
  });

  it("answers: 201 done; 404/410 gone; 413 not retried; 429/5xx retried with Retry-After; 400/401/403 rejected", async () => {
    const now = Date.UTC(2026, 0, 1);
    const c = (status: number, headers?: Record<string, string>) => classifyPushAnswer(new Response("why", { status, headers }), now);
    expect(await c(201)).toEqual({ kind: "delivered", status: 201 });
    expect((await c(404)).kind).toBe("gone");
    expect((await c(410)).kind).toBe("gone");
    expect((await c(413)).kind).toBe("too_large");
    expect(await c(429, { "retry-after": "120" })).toEqual({ kind: "retry", status: 429, retryAfterSeconds: 120 });
    expect(await c(503, { "retry-after": new Date(now + 30_000).toUTCString() })).toEqual({
      kind: "retry",
      status: 503,
      retryAfterSeconds: 30,
    });
    expect((await c(500)).kind).toBe("retry");
    for (const s of [400, 401, 403]) expect(await c(s)).toEqual({ kind: "rejected", status: s, detail: "why" });
  });

  it("a network failure is retried, not thrown", async () => {
    const { sender } = senderWith(() => {
      throw new TypeError("connection refused");
    });
    expect((await sender.send(nodeSubscription("https://push.example/abc"), utf8Encode("x"), { ttl: 1 })).kind).toBe("retry");
  });

  it("docs/mailbox.md: a redirect is never followed: fetch is asked not to, and a 3xx answer is rejected, not retried", async () => {
    const { sender, calls } = senderWith(
      () => new Response(null, { status: 307, headers: { location: "https://relay.example/minca/v1/mailbox/x" } }),
    );
    const out = await sender.send(nodeSubscription("https://push.example/abc"), utf8Encode("x"), { ttl: 1 });
    expect(out).toEqual({ kind: "rejected", status: 307, detail: "a redirect (not followed)" });
    expect(calls[0].init.redirect).toBe("manual");
  });

  it("docs/mailbox.md: at most max_answer_bytes of an endless error answer are read, then the rest is cancelled", async () => {
    let pulled = 0;
    let cancelled = false;
    const endless = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled += 1024;
        c.enqueue(new Uint8Array(1024).fill(0x61));
      },
      cancel() {
        cancelled = true;
      },
    });
    const out = await classifyPushAnswer(new Response(endless, { status: 400 }), 0);
    expect(out.kind).toBe("rejected");
    expect(pulled).toBeLessThanOrEqual(WEBPUSH_LIMITS.max_answer_bytes + 2 * 1024);
    expect(cancelled).toBe(true);
    expect(await readAtMost(new Response("x".repeat(10_000)).body)).toHaveLength(WEBPUSH_LIMITS.max_answer_bytes);
  });

  it("docs/mailbox.md: a push that takes longer than the timeout is given up and retried", async () => {
    const fetch: FetchLike = (_url, init) =>
      new Promise((_resolve, reject) => init.signal?.addEventListener("abort", () => reject(init.signal?.reason)));
    const sender = new WebPushSender({ keys: generateVapidKeys(), subject: "mailto:ops@example.com", fetch, timeoutMs: 20 });
    expect((await sender.send(nodeSubscription("https://push.example/abc"), utf8Encode("x"), { ttl: 1 })).kind).toBe("retry");
    expect(WEBPUSH_LIMITS.send_timeout_seconds).toBe(10);
  });

  it("a push service's answer text is logged bounded and without control characters", async () => {
    const nasty = `bad\r\n{"level":"info","msg":"forged"}\u001b[31m${"z".repeat(5_000)}`;
    const out = await classifyPushAnswer(new Response(nasty, { status: 400 }), 0);
    const detail = out.kind === "rejected" ? out.detail : "";
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the test asserts that no control character reaches the log
    expect(detail).not.toMatch(/[\u0000-\u001f]/);
    expect(detail.length).toBeLessThanOrEqual(WEBPUSH_LIMITS.max_logged_answer_chars + 1);
    expect(detail.startsWith('bad {"level"')).toBe(true);
    expect(answerForLog("a\u2028b\tc")).toBe("a b c");
  });

  it("backoff doubles from the base up to its cap; never sooner than Retry-After (itself bounded)", () => {
    const p = { baseSeconds: 10, maxSeconds: 3600, retryAfterMaxSeconds: 86_400 };
    expect([1, 2, 3, 4].map((a) => retryDelaySeconds(a, undefined, p))).toEqual([10, 20, 40, 80]);
    expect(retryDelaySeconds(1, 300, p)).toBe(300);
    expect(retryDelaySeconds(5, 1, p)).toBe(160);
    expect(retryDelaySeconds(12, undefined, p)).toBe(3600);
    expect(retryDelaySeconds(100, undefined, p)).toBe(3600);
    expect(retryDelaySeconds(1, 7200, p)).toBe(7200);
    expect(retryDelaySeconds(1, 10 ** 12, p)).toBe(86_400);
    expect(parseRetryAfter("soon", 0)).toBeUndefined();
  });
});

describe("PushSubscription.toJSON() as receivers send it", () => {
  const good = nodeSubscription("https://fcm.googleapis.com/fcm/send/x");
  it("accepts https endpoints with a P-256 p256dh and a 16-byte auth (padding tolerated)", () => {
    expect(pushSubscriptionSchema.safeParse({ endpoint: good.endpoint, keys: good.keys, expirationTime: null }).success).toBe(true);
    expect(pushSubscriptionSchema.safeParse({ endpoint: good.endpoint, keys: { ...good.keys, auth: good.keys.auth + "==" } }).success).toBe(
      true,
    );
  });
  it("refuses non-http(s) endpoints, credentials, short keys, and points off the curve (where it may send: endpoint.test.ts)", () => {
    const bad = (o: object) => expect(pushSubscriptionSchema.safeParse(o).success).toBe(false);
    bad({ endpoint: "ftp://push.example/x", keys: good.keys });
    bad({ endpoint: "https://u:p@push.example/x", keys: good.keys });
    bad({ endpoint: "https://push.example/x", keys: { ...good.keys, auth: "AAAA" } });
    bad({ endpoint: "https://push.example/x", keys: { ...good.keys, p256dh: "B" + "A".repeat(86) } });
    bad({ endpoint: "https://push.example/x" });
    expect(pushSubscriptionSchema.safeParse({ endpoint: "http://127.0.0.1:9/x", keys: good.keys }).success).toBe(true);
  });
  it("fuzz: arbitrary JSON is refused or gives keys that decode to 65 and 16 bytes", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.jsonValue(), fc.record({ endpoint: fc.webUrl(), keys: fc.record({ p256dh: fc.base64String(), auth: fc.string() }) })),
        (v) => {
          const r = pushSubscriptionSchema.safeParse(v);
          if (r.success) {
            expect(Buffer.from(r.data.keys.p256dh.replace(/=+$/, ""), "base64url")).toHaveLength(65);
            expect(Buffer.from(r.data.keys.auth.replace(/=+$/, ""), "base64url")).toHaveLength(16);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
