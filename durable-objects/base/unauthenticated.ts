// The sockets of one object that have not authenticated yet ("parked", docs/hostile.md): each is
// closed with 4001 when the auth timeout passes, and how many are kept is bounded three ways:
//
// - per object (common.max_unauthenticated_sockets_per_object): one more closes a parked socket
//   with 1013, among those past their grace (common.unauthenticated_grace_ms), the oldest of the
//   client that holds the most of them (among equals, the client that opened the most sockets to
//   this object lately: a client that keeps reconnecting crowds out its own kind before a device
//   that connected once). When none is past its grace (or all are being checked), the new one is
//   accepted anyway up to the object's ceiling (common.max_unauthenticated_sockets_per_object_in_grace,
//   lower where the object's own socket cap asks it), then refused (HTTP 429) until the oldest
//   leaves its grace. So every socket accepted has its grace to answer its challenge: a flood in
//   shared mode, where nothing tells the flood from a device, takes turns with the device instead
//   of crowding it out before its answer arrives (a device answering after 250 ms was closed every
//   time by 40 upgrades a second, when the oldest went first);
// - per client and object (common.max_unauthenticated_sockets_per_client_per_object): one more
//   closes that client's own oldest with 1013;
// - per client across the relay (common.max_unauthenticated_sockets_per_client, parked-across.ts):
//   one more is refused (HTTP 429) before a socket exists.
//
// The per-client bounds need a trusted client address: in shared mode every client is one, and
// only the per-object bound holds. A socket that has sent its register / join is being checked
// and is never closed to make room; like a socket in its grace it counts toward the ceiling, past
// which the new one is refused (429) instead, so the number stays bounded.
//
// The timeout is an in-memory timer, not an alarm: an alarm is stored, and a socket that never
// authenticates must leave nothing behind. A pending timer keeps the object from hibernating until
// it fires; if the instance goes anyway, the object's constructor arms it again (`rearm`) from the
// sockets' attachments when the object next starts.
import { asEntered } from "./object-usage";
import { rateLimitedError, socketError, type SocketError } from "../../shared/errors";
import { CLOSE_CODES, COMMON_LIMITS } from "../../shared/limits";
import { isTrustedClient, SHARED_CLIENT } from "./client-header";
import { parkedAcross, reportParked } from "./parked-across";

export interface ParkedSocket {
  ws: WebSocket;
  openedAt: number;
  client?: string;
}

export interface ParkedSocketHost {
  /** The open sockets that have not authenticated, with when each was accepted and from whom. */
  unauthenticated(): ParkedSocket[];
  /** This object's id (the relay-wide count is kept per object). */
  objectId(): string;
  /** Tells the client why and closes the socket. */
  refuse(ws: WebSocket, frame: SocketError, code: number, reason: string): void;
  /** A socket did not authenticate in time (logged). */
  timedOut(ws: WebSocket): void;
  /** Something the status page counts changed (`errors` counted once per refusal). */
  refused(n: number): void;
}

/** What keeps parked sockets within their bounds beyond the timeout; the runtime may linger after a close. */
const LINGER_MS = 15_000;

export class UnauthenticatedSockets {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Infinity;
  /** Sockets closed (to make room, or timed out) whose close the client has not answered yet: they no longer count. */
  private readonly closing = new WeakSet<WebSocket>();
  /** Sockets whose register / join is being checked: never closed to make room. */
  private readonly beingChecked = new WeakSet<WebSocket>();
  /** Sockets each client opened to this object lately (within the auth timeout), for who goes first. */
  private readonly opens = new Map<string, { n: number; since: number }>();

  constructor(
    private readonly host: ParkedSocketHost,
    private readonly timeoutMs: number,
    /** Parked sockets kept when none may be closed to make room (common.max_unauthenticated_sockets_per_object_in_grace). */
    private readonly ceiling: number = COMMON_LIMITS.max_unauthenticated_sockets_per_object_in_grace,
  ) {}

  /**
   * Before one more unauthenticated socket from `client` is accepted: null when it may be (room
   * made, see the top of this file), else the seconds it should wait (HTTP 429).
   */
  admit(client: string | undefined, now: number = Date.now()): number | null {
    const trusted = isTrustedClient(client);
    if (trusted && parkedAcross(client, now) >= COMMON_LIMITS.max_unauthenticated_sockets_per_client) {
      return Math.ceil(this.timeoutMs / 1000);
    }
    const parked = this.parked();
    const out: ParkedSocket[] = [];
    const evictable = parked.filter((p) => !this.beingChecked.has(p.ws));
    if (trusted) {
      const mine = evictable.filter((p) => p.client === client).sort((a, b) => a.openedAt - b.openedAt);
      const over = parked.filter((p) => p.client === client).length - COMMON_LIMITS.max_unauthenticated_sockets_per_client_per_object + 1;
      if (over > mine.length) return 1; // its others are being checked: done within a round trip
      if (over > 0) out.push(...mine.slice(0, over));
    }
    let left = parked.length - out.length;
    const cap = COMMON_LIMITS.max_unauthenticated_sockets_per_object;
    if (left >= cap) {
      const graced = (p: ParkedSocket) => now - p.openedAt < COMMON_LIMITS.unauthenticated_grace_ms;
      const candidates = evictable.filter((p) => !out.includes(p) && !graced(p));
      const held = new Map<string, number>();
      for (const p of parked) held.set(p.client ?? "", (held.get(p.client ?? "") ?? 0) + 1);
      const opened = (c: string | undefined) => this.openedLately(c ?? "", now);
      candidates.sort(
        (a, b) => held.get(b.client ?? "")! - held.get(a.client ?? "")! || opened(b.client) - opened(a.client) || a.openedAt - b.openedAt,
      );
      while (left >= cap && candidates.length > 0) {
        out.push(candidates.shift()!);
        left--;
      }
      if (left >= this.ceiling) {
        // none may go: each is in its grace or being checked (done within a round trip)
        const leaves = candidatesLeaving(parked, out, now);
        return Math.max(1, Math.ceil((leaves - now) / 1000));
      }
    }
    for (const { ws } of out) {
      this.closing.add(ws);
      this.host.refuse(
        ws,
        rateLimitedError("too many unauthenticated connections; this one was the oldest: reconnect and authenticate at once", 1000),
        CLOSE_CODES.try_again_later,
        "too many unauthenticated connections",
      );
    }
    if (out.length > 0) this.host.refused(out.length);
    if (client !== undefined) this.countOpen(client, now);
    return null;
  }

  /** A socket was accepted unauthenticated at `openedAt`: its deadline is armed and it is counted. */
  accepted(openedAt: number): void {
    this.arm(openedAt + this.timeoutMs);
    this.report();
  }

  /** `ws` sent its register / join (`on`), or the check ended: while checked it is never crowded out. */
  checking(ws: WebSocket, on: boolean): void {
    if (on) this.beingChecked.add(ws);
    else this.beingChecked.delete(ws);
  }

  /**
   * Closes with 4001 every socket that has not authenticated within the timeout; returns how many.
   * The timer calls it (a worker test's subclass does too, with its own `now`). A client that never sent a frame keeps its TCP connection
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
        this.closing.add(ws);
        n++;
      } else next = Math.min(next, deadline);
    }
    this.disarm();
    if (next !== Infinity) this.arm(next, now);
    if (n > 0) this.host.refused(n);
    this.report();
    return n;
  }

  /**
   * A socket authenticated or closed, or the object started again: the timer waits for the
   * earliest deadline left, or for none (so the object may hibernate), and the relay-wide count
   * is told what this object holds now.
   */
  rearm(onlyIfArmed = true): void {
    this.report();
    if (onlyIfArmed && this.timer === undefined) return;
    this.disarm();
    const now = Date.now();
    for (const { openedAt } of this.host.unauthenticated()) this.arm(openedAt + this.timeoutMs, now);
  }

  /** The parked sockets that count: not those already told to go. */
  private parked(): ParkedSocket[] {
    return this.host.unauthenticated().filter((p) => !this.closing.has(p.ws));
  }

  /** Tells the relay-wide count (parked-across.ts) how many parked sockets each client holds here. */
  private report(): void {
    const counts = new Map<string, number>();
    let until = 0;
    for (const p of this.parked()) {
      // every client, the shared one too: the relay-wide bound (common.max_unauthenticated_sockets) counts them all
      const client = isTrustedClient(p.client) ? p.client : SHARED_CLIENT;
      counts.set(client, (counts.get(client) ?? 0) + 1);
      until = Math.max(until, p.openedAt + this.timeoutMs + LINGER_MS);
    }
    reportParked(this.host.objectId(), counts, until);
  }

  private countOpen(client: string, now: number): void {
    const o = this.opens.get(client);
    this.opens.delete(client);
    if (this.opens.size >= COMMON_LIMITS.clients_remembered_per_object) this.opens.delete(this.opens.keys().next().value as string);
    this.opens.set(client, o && now - o.since < this.timeoutMs ? { n: o.n + 1, since: o.since } : { n: 1, since: now });
  }

  private openedLately(client: string, now: number): number {
    const o = this.opens.get(client);
    return o && now - o.since < this.timeoutMs ? o.n : 0;
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
      () =>
        asEntered(() => {
          this.timer = undefined;
          this.timerAt = Infinity;
          this.closeExpired();
        }),
      Math.max(0, at - now),
    );
  }
}

/** When the first parked socket still kept leaves its grace (a socket being checked is done within a round trip: now). */
function candidatesLeaving(parked: ParkedSocket[], out: ParkedSocket[], now: number): number {
  let first = Infinity;
  for (const p of parked) if (!out.includes(p)) first = Math.min(first, p.openedAt + COMMON_LIMITS.unauthenticated_grace_ms);
  return Math.max(now, first);
}
