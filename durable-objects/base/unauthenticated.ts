// The sockets of one object that have not authenticated yet (docs/hostile.md): each is closed with
// 4001 when the auth timeout passes, and at most common.max_unauthenticated_sockets_per_object of
// them are kept, the oldest closed with 1013 when one more arrives.
//
// The timeout is an in-memory timer, not an alarm: an alarm is stored, and a socket that never
// authenticates must leave nothing behind. A pending timer keeps the object from hibernating until
// it fires; if the instance goes anyway, the object's constructor arms it again (`rearm`) from the
// sockets' attachments when the object next starts.
import { rateLimitedError, socketError } from "../../shared/errors";
import { CLOSE_CODES, COMMON_LIMITS } from "../../shared/limits";

export interface ParkedSocketHost {
  /** The open sockets that have not authenticated, with when each was accepted. */
  unauthenticated(): Array<{ ws: WebSocket; openedAt: number }>;
  /** Tells the client why and closes the socket. */
  refuse(ws: WebSocket, frame: unknown, code: number, reason: string): void;
  /** A socket did not authenticate in time (logged). */
  timedOut(ws: WebSocket): void;
  /** Something the status page counts changed (`errors` counted once per refusal). */
  refused(n: number): void;
}

export class UnauthenticatedSockets {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Infinity;
  /** Sockets closed to make room, whose close the client has not answered yet. */
  private readonly crowdedOut = new WeakSet<WebSocket>();

  constructor(
    private readonly host: ParkedSocketHost,
    private readonly timeoutMs: number,
  ) {}

  /** A socket was accepted unauthenticated at `openedAt`: its deadline is armed. */
  accepted(openedAt: number): void {
    this.arm(openedAt + this.timeoutMs);
  }

  /**
   * Before one more unauthenticated socket is accepted: while the cap is reached, the oldest
   * unauthenticated socket is told rate_limited and closed with 1013 (try again later: not 4001,
   * after which clients do not come back, since a real device may be crowded out too).
   * Authenticated sockets are never touched, so a flood of sockets that never authenticate (npubs
   * and room ids are public) cannot keep a real device out; a real device authenticates within a
   * round trip, long before the cap's worth of newer sockets arrives.
   */
  makeRoom(): void {
    const cap = COMMON_LIMITS.max_unauthenticated_sockets_per_object;
    const parked = this.host.unauthenticated().filter((p) => !this.crowdedOut.has(p.ws));
    if (parked.length < cap) return;
    parked.sort((a, b) => a.openedAt - b.openedAt);
    const out = parked.slice(0, parked.length - cap + 1);
    for (const { ws } of out) {
      this.crowdedOut.add(ws);
      this.host.refuse(
        ws,
        rateLimitedError("too many unauthenticated connections; this one was the oldest: reconnect and authenticate at once", 1000),
        CLOSE_CODES.try_again_later,
        "too many unauthenticated connections",
      );
    }
    this.host.refused(out.length);
  }

  /**
   * Closes with 4001 every socket that has not authenticated within the timeout; returns how many.
   * The timer calls it; so may tests. A client that never sent a frame keeps its TCP connection
   * about 10 s past this close: a runtime fault no Worker can avoid (docs/hostile.md, "The TCP
   * connection after an auth-timeout close").
   */
  closeExpired(now: number = Date.now()): number {
    let next = Infinity;
    let n = 0;
    for (const { ws, openedAt } of this.host.unauthenticated()) {
      const deadline = openedAt + this.timeoutMs;
      if (deadline <= now) {
        this.host.timedOut(ws);
        this.host.refuse(ws, socketError("auth_failed", "authentication timed out"), CLOSE_CODES.auth_failed, "authentication timed out");
        n++;
      } else next = Math.min(next, deadline);
    }
    this.disarm();
    if (next !== Infinity) this.arm(next, now);
    if (n > 0) this.host.refused(n);
    return n;
  }

  /**
   * A socket authenticated or closed, or the object started again: the timer waits for the
   * earliest deadline left, or for none (so the object may hibernate).
   */
  rearm(onlyIfArmed = true): void {
    if (onlyIfArmed && this.timer === undefined) return;
    this.disarm();
    const now = Date.now();
    for (const { openedAt } of this.host.unauthenticated()) this.arm(openedAt + this.timeoutMs, now);
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private arm(at: number, now: number = Date.now()): void {
    if (at >= this.timerAt) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Infinity;
        this.closeExpired();
      },
      Math.max(0, at - now),
    );
  }
}
