// Idle registered sockets (docs/tally.md, "Idle sockets"): a registered socket silent past
// tally.idle_timeout_seconds is closed with 4408, so a half-open connection does not count as a
// device for ever. Pings are answered by the runtime without waking the object, so the last ping
// is read from getWebSocketAutoResponseTimestamp. TallyUser (tally-user.ts) runs this on its alarm.
import { CLOSE_CODES, TALLY_LIMITS } from "../../shared/limits";

export const IDLE_MS = TALLY_LIMITS.idle_timeout_seconds * 1000;

/** Whether a message from a socket last noted at `seenAt` is noted again (at most every third of the idle bound). */
export function noteSeen(att: { authed: boolean; seenAt?: number } | null, now: number): boolean {
  return att?.authed === true && now - (att.seenAt ?? 0) > IDLE_MS / 3;
}

/**
 * Closes the registered sockets silent past the idle bound, each as if its close had come (it may
 * never come back); whether registered sockets remain.
 */
export async function closeIdle(
  ctx: DurableObjectState,
  devices: Array<{ ws: WebSocket; att: { openedAt: number; seenAt?: number } }>,
  close: (ws: WebSocket, code: number, reason: string) => void,
  closed: (ws: WebSocket, code: number, reason: string) => Promise<void>,
  now: number,
): Promise<boolean> {
  let remaining = false;
  for (const { ws, att } of devices) {
    const pinged = ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? 0;
    const last = Math.max(att.seenAt ?? att.openedAt, pinged);
    if (now - last <= IDLE_MS) {
      remaining = true;
      continue;
    }
    close(ws, CLOSE_CODES.idle_timeout, "idle");
    await closed(ws, CLOSE_CODES.idle_timeout, "idle");
  }
  return remaining;
}
