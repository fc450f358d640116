// What each socket of an object received and was sent, for the one log line its session ends with
// (docs/operating.md): in memory, so after the object hibernated it counts from its waking
// (`counted_since_ms` says from when).
import { log } from "../../server/log";

interface Traffic {
  in: number;
  out: number;
  since: number;
}

export class SocketTraffic {
  private readonly traffic = new WeakMap<WebSocket, Traffic>();

  /** `ws` is counted from now on (accepted, or first heard from after a wake). */
  of(ws: WebSocket): Traffic {
    let t = this.traffic.get(ws);
    if (t === undefined) {
      t = { in: 0, out: 0, since: Date.now() };
      this.traffic.set(ws, t);
    }
    return t;
  }

  /** One frame was sent on `ws` (not counted for a socket not heard from since a wake). */
  sent(ws: WebSocket): void {
    const t = this.traffic.get(ws);
    if (t !== undefined) t.out++;
  }

  /** One line per socket session when it ends: which object kind, how long, how much, how it closed, from where. */
  logSession(
    object: string,
    ws: WebSocket,
    att: { openedAt: number; authed: boolean; client?: string; requestId?: string } | null,
    code: number,
  ): void {
    const t = this.traffic.get(ws);
    const now = Date.now();
    log.info("socket session", {
      object,
      duration_ms: att ? now - att.openedAt : undefined,
      authed: att?.authed ?? false,
      messages_in: t?.in ?? 0,
      messages_out: t?.out ?? 0,
      counted_since_ms: t ? now - t.since : 0,
      close_code: code,
      client: att?.client,
      request_id: att?.requestId,
    });
  }
}
