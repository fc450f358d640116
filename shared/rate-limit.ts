// A token bucket, with a count of recent refusals so that a peer that keeps pushing past its
// limit can be disconnected (close 4029) rather than answered forever.
import { COMMON_LIMITS } from "./limits";
import { RecentMap } from "./recent-map";
import { shareAt, shareCharge, shareWaitMs, type ShareState } from "./storage";

export class TokenBucket {
  private tokens: number;
  private last: number;
  private strikes = 0;
  private strikeWindowStart = 0;

  constructor(
    private readonly capacity: number,
    private readonly perSecond: number,
    now = Date.now(),
  ) {
    this.tokens = capacity;
    this.last = now;
  }

  /** Takes `n` tokens if there are enough; false otherwise. */
  take(now: number, n = 1): boolean {
    const elapsed = Math.max(0, now - this.last) / 1000;
    this.tokens = Math.min(this.capacity, this.tokens + elapsed * this.perSecond);
    this.last = now;
    if (this.tokens >= n) {
      this.tokens -= n;
      return true;
    }
    return false;
  }

  /** Records a refusal and returns how many there were in the last minute. */
  strike(now: number): number {
    if (now - this.strikeWindowStart > 60_000) {
      this.strikeWindowStart = now;
      this.strikes = 0;
    }
    return ++this.strikes;
  }

  /** Milliseconds until `n` tokens are available. */
  retryAfterMs(n = 1): number {
    return this.tokens >= n ? 0 : Math.ceil(((n - this.tokens) / this.perSecond) * 1000);
  }
}

/** Token-bucket rates of one kind of request: burst and sustained per second. */
export interface Rate {
  burst: number;
  perSecond: number;
}

/**
 * Token buckets per client and kind of request, held in memory (an evicted object forgets them,
 * which only forgives an idle client). At most `maxClients` keys (common.client_buckets_per_object):
 * past it the least recently used bucket is forgotten, so many addresses cost bounded memory and
 * never reset the buckets of clients still sending.
 */
export class ClientBuckets<K extends string> {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(
    private readonly rates: Record<K, Rate>,
    private readonly maxClients: number = COMMON_LIMITS.client_buckets_per_object,
  ) {}

  /** Takes `n` tokens of `kind` for `client`: null when granted, else the seconds to wait (at least 1). */
  take(kind: K, client: string, n = 1, now = Date.now()): number | null {
    const key = `${kind}:${client}`;
    let bucket = this.buckets.get(key);
    if (!bucket) {
      const r = this.rates[kind];
      bucket = new TokenBucket(r.burst, r.perSecond, now);
    }
    remember(this.buckets, key, bucket, this.maxClients);
    if (bucket.take(now, n)) return null;
    return Math.max(1, Math.ceil(bucket.retryAfterMs(n) / 1000));
  }
}

/**
 * Per-client bounds of one object's sockets that a reconnect does not reset (docs/hostile.md):
 * a token bucket on new sockets per client, and the message bucket (with its count of refusals)
 * of a client's socket that closed, which that client's next socket takes over. Held in memory:
 * an evicted object forgets them, which only forgives a client that was idle long enough for its
 * buckets to refill anyway. At most `maxClients` clients of each kind are remembered (the least
 * recently used are forgotten first).
 */
export class ClientSocketRates {
  private readonly connects = new Map<string, TokenBucket>();
  private readonly left = new Map<string, TokenBucket>();

  constructor(
    private readonly connectRate: Rate,
    private readonly maxClients: number,
  ) {}

  /** One more socket from `client`: null when admitted, else the seconds to wait (at least 1). */
  connect(client: string, now = Date.now()): number | null {
    const bucket = this.connects.get(client) ?? new TokenBucket(this.connectRate.burst, this.connectRate.perSecond, now);
    remember(this.connects, client, bucket, this.maxClients);
    if (bucket.take(now)) return null;
    return Math.max(1, Math.ceil(bucket.retryAfterMs(1) / 1000));
  }

  /** A socket of `client` closed with its message bucket as it was. */
  leave(client: string, messages: TokenBucket): void {
    remember(this.left, client, messages, this.maxClients);
  }

  /** The message bucket of `client`'s last closed socket, taken over (once) by its new socket. */
  resume(client: string): TokenBucket | undefined {
    const b = this.left.get(client);
    if (b) this.left.delete(client);
    return b;
  }
}

/** Sets `key` as the most recently used entry of `map`, forgetting the least recently used past `max`. */
function remember(map: Map<string, TokenBucket>, key: string, value: TokenBucket, max: number): void {
  map.delete(key);
  if (map.size >= max) map.delete(map.keys().next().value as string);
  map.set(key, value);
}

/**
 * Each client's share of each total (docs/hostile.md, "Shares of a total"): a byte budget per
 * client and kind, refilled evenly over `periodMs`, held in memory for at most `maxClients`
 * clients and kinds (the least recently used forgotten first: forgetting only forgives).
 */
export class ClientShares<K extends string> {
  private readonly shares: RecentMap<string, ShareState>;

  constructor(
    private readonly periodMs: number,
    maxClients: number,
  ) {
    this.shares = new RecentMap(maxClients);
  }

  /** Milliseconds `client` waits before it may store `cost` bytes of `kind` within a share of `capacity` (0: now). */
  wait(kind: K, client: string, capacity: number, cost: number, now = Date.now()): number {
    const s = shareAt(this.shares.get(`${kind}:${client}`), capacity, this.periodMs, now);
    return shareWaitMs(s, capacity, this.periodMs, cost);
  }

  /**
   * Takes `cost` bytes of `kind` from `client`'s share at once when they fit (answers 0), else
   * answers the ms to wait and takes nothing. A reservation: requests running together each see
   * what the others took, so none passes the share; settle with refund() for what was not stored.
   */
  reserve(kind: K, client: string, capacity: number, cost: number, now = Date.now()): number {
    const key = `${kind}:${client}`;
    const s = shareAt(this.shares.get(key), capacity, this.periodMs, now);
    const wait = shareWaitMs(s, capacity, this.periodMs, cost);
    if (wait === 0) this.shares.set(key, shareCharge(s, cost));
    return wait;
  }

  /** Gives back `bytes` of a reservation of `client` that were not stored (never past the share's capacity). */
  refund(kind: K, client: string, capacity: number, bytes: number, now = Date.now()): void {
    if (!(bytes > 0)) return;
    const key = `${kind}:${client}`;
    const s = shareAt(this.shares.get(key), capacity, this.periodMs, now);
    this.shares.set(key, { tokens: Math.min(capacity, s.tokens + bytes), at: s.at });
  }

  /** `client` stored `cost` bytes of `kind`. */
  charge(kind: K, client: string, capacity: number, cost: number, now = Date.now()): void {
    const key = `${kind}:${client}`;
    this.shares.set(key, shareCharge(shareAt(this.shares.get(key), capacity, this.periodMs, now), cost));
  }
}
