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
