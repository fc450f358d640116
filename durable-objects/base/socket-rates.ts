// The rate limits of one object's sockets (docs/hostile.md, "Rate limits that a reconnect does not
// reset", "Shared mode", "Parked sockets"):
//
// - every socket has a message bucket (common.rate_burst, common.rate_messages_per_second);
//   before it authenticates, a smaller one (common.unauthenticated_rate_burst,
//   common.unauthenticated_messages_per_second): a register or join and a few more frames;
// - new sockets per client are a token bucket (common.client_connect_burst, then
//   common.client_connects_per_second): more are HTTP 429;
// - a client's socket that closes leaves its message bucket (and its refusals) to that client's
//   next socket, so a reconnect does not reset the limit.
//
// The two per-client bounds need a trusted client address: in shared mode every client is one,
// and one bucket for everyone would let any client lock every other out (twenty upgrades a second
// to a user's npub kept that user's own devices out), so they do not apply there.
import { COMMON_LIMITS } from "../../shared/limits";
import { ClientSocketRates, TokenBucket } from "../../shared/rate-limit";
import { isTrustedClient } from "./client-header";

export type Admitted = { ok: true } | { ok: false; closing: boolean; retryAfterMs: number };

export class SocketRates {
  /** In-memory rate state. Losing it on eviction is harmless: an evicted socket was idle, its bucket full. */
  private readonly buckets = new WeakMap<WebSocket, TokenBucket>();
  /** The buckets of sockets that have not authenticated (kept apart: they never pass to the client's next socket). */
  private readonly parked = new WeakMap<WebSocket, TokenBucket>();
  /** Per-client bounds that a reconnect does not reset (in memory, like the buckets). */
  private readonly clients = new ClientSocketRates(
    { burst: COMMON_LIMITS.client_connect_burst, perSecond: COMMON_LIMITS.client_connects_per_second },
    COMMON_LIMITS.clients_remembered_per_object,
  );

  /** One more socket from `client`: null when admitted, else the seconds to wait. */
  connect(client: string | undefined, now: number = Date.now()): number | null {
    return isTrustedClient(client) ? this.clients.connect(client, now) : null;
  }

  /** One frame on `ws` (of `client`, authenticated or not): whether it is read, else how long to wait and whether to close. */
  take(ws: WebSocket, client: string | undefined, authed: boolean, now: number = Date.now()): Admitted {
    const bucket = authed ? this.bucketOf(ws, client) : this.parkedBucketOf(ws, now);
    if (bucket.take(now)) return { ok: true };
    const closing = bucket.strike(now) >= COMMON_LIMITS.rate_limited_before_close;
    return { ok: false, closing, retryAfterMs: bucket.retryAfterMs(1) };
  }

  /** `ws` of `client` closed: its message bucket waits for the client's next socket. */
  closed(ws: WebSocket, client: string | undefined): void {
    const bucket = this.buckets.get(ws);
    if (bucket && isTrustedClient(client)) this.clients.leave(client, bucket);
  }

  private bucketOf(ws: WebSocket, client: string | undefined): TokenBucket {
    let bucket = this.buckets.get(ws);
    if (!bucket) {
      bucket =
        (isTrustedClient(client) ? this.clients.resume(client) : undefined) ??
        new TokenBucket(COMMON_LIMITS.rate_burst, COMMON_LIMITS.rate_messages_per_second);
      this.buckets.set(ws, bucket);
    }
    return bucket;
  }

  private parkedBucketOf(ws: WebSocket, now: number): TokenBucket {
    let bucket = this.parked.get(ws);
    if (!bucket) {
      bucket = new TokenBucket(COMMON_LIMITS.unauthenticated_rate_burst, COMMON_LIMITS.unauthenticated_messages_per_second, now);
      this.parked.set(ws, bucket);
    }
    return bucket;
  }
}
