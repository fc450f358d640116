// A token bucket, with a count of recent refusals so that a peer that keeps pushing past its
// limit can be disconnected (close 4029) rather than answered forever.

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
 * which only forgives an idle client). Past `maxClients` keys every bucket is dropped at once, so
 * many addresses cost bounded memory.
 */
export class ClientBuckets<K extends string> {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(
    private readonly rates: Record<K, Rate>,
    private readonly maxClients = 10_000,
  ) {}

  /** Takes `n` tokens of `kind` for `client`: null when granted, else the seconds to wait (at least 1). */
  take(kind: K, client: string, n = 1, now = Date.now()): number | null {
    const key = `${kind}:${client}`;
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= this.maxClients) this.buckets.clear();
      const r = this.rates[kind];
      bucket = new TokenBucket(r.burst, r.perSecond, now);
      this.buckets.set(key, bucket);
    }
    if (bucket.take(now, n)) return null;
    return Math.max(1, Math.ceil(bucket.retryAfterMs(n) / 1000));
  }
}
