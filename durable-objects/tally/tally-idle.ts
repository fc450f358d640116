// Idle registered sockets (docs/tally.md, "Idle sockets"): a registered socket silent past
// tally.idle_timeout_seconds counts as offline, so a half-open connection does not count as a
// device for ever. Nothing runs on a timer for it: idle costs nothing (a socket that only pings
// never wakes its object). Whether a device went silent is read when it matters (a delivery, a
// presence answer, a count of devices): from the attachment's last message (`seenAt`) and the
// runtime's last answered ping (`getWebSocketAutoResponseTimestamp`, which a ping sets without
// waking the object). TallyUser (tally-user.ts) closes a silent device with 4408 when it finds one.
import { TALLY_LIMITS } from "../../shared/limits";

const IDLE_MS = TALLY_LIMITS.idle_timeout_seconds * 1000;

/** Whether a message from a socket last noted at `seenAt` is noted again (at most every third of the idle bound). */
export function noteSeen(att: { authed: boolean; seenAt?: number } | null, now: number): boolean {
  return att?.authed === true && now - (att.seenAt ?? 0) > IDLE_MS / 3;
}

/** When the socket was last heard from: its last noted message, or the runtime's last answered ping, whichever is later. */
function lastHeard(att: { openedAt: number; seenAt?: number }, pingedAt: Date | null): number {
  return Math.max(att.seenAt ?? att.openedAt, pingedAt?.getTime() ?? 0);
}

/** Whether a registered socket has been silent past the idle bound at `now` (then it counts as offline). */
export function silentPast(att: { openedAt: number; seenAt?: number }, pingedAt: Date | null, now: number): boolean {
  return now - lastHeard(att, pingedAt) > IDLE_MS;
}
