// "Connections": a body the relay does not read to its end (one over its bound, or one on
// a route that takes none) is drained, so the documented answer arrives whole instead of a
// connection reset (EPIPE) or a truncated answer (workers/body.ts, docs/hostile.md).
import { describe, expect, inject, it } from "vitest";
import { request } from "node:http";
import { COMMON_LIMITS, MAILBOX_LIMITS } from "../../shared/limits";

const base = inject("relayUrl");

/** Sends `body` (declared or chunked) and resolves with the answer as read, or the error that cut it. */
function send(path: string, method: string, body: Buffer, declared: boolean): Promise<{ status?: number; text?: string; error?: string }> {
  return new Promise((resolve) => {
    const headers: Record<string, string | number> = { "content-type": "application/json" };
    if (declared) headers["content-length"] = body.length;
    const req = request(`${base}${path}`, { method, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode, text }));
      res.on("error", (e) => resolve({ error: `answer cut: ${e.message}` }));
    });
    req.on("error", (e) => resolve({ error: (e as NodeJS.ErrnoException).code ?? e.message }));
    req.end(body);
  });
}

const topic = "b".repeat(43);
const big = (n: number) => Buffer.alloc(n, 0x61);
const ROUNDS = 5;

describe("common.max_drained_body_bytes: bodies the relay does not want are drained, so the answer arrives whole", () => {
  it("a GET with a 4 MiB body on a route that takes none gets its whole 200 answer, never a reset", async () => {
    for (let i = 0; i < ROUNDS; i++) {
      expect(await send("/healthz", "GET", big(4 << 20), true)).toEqual({ status: 200, text: "ok" });
    }
  });

  for (const declared of [true, false]) {
    it(`a mailbox POST several MiB over max_body_bytes (${declared ? "Content-Length" : "chunked"}) gets its whole 413 too_large answer, never a reset`, async () => {
      for (let i = 0; i < ROUNDS; i++) {
        const r = await send(`/minca/v1/mailbox/${topic}`, "POST", big(MAILBOX_LIMITS.max_body_bytes + 1 + (8 << 20)), declared);
        expect(r.error).toBeUndefined();
        expect(r.status).toBe(413);
        expect(JSON.parse(r.text!).error.code).toBe("too_large");
      }
    });
  }

  it("the drain is bounded: a body declared past max_drained_body_bytes is answered at once without being read", async () => {
    const r = await new Promise<number | undefined>((resolve) => {
      const req = request(
        `${base}/minca/v1/mailbox/${topic}`,
        {
          method: "POST",
          headers: { "content-type": "application/json", "content-length": COMMON_LIMITS.max_drained_body_bytes + 1 },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode);
          req.destroy();
        },
      );
      req.on("error", () => resolve(undefined));
      req.write(big(1024)); // and never the rest
    });
    expect(r).toBe(413);
  });
});
