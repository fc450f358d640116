// A known idle point for Passnote peers on the in-memory bus, and a clock a test moves by hand.
//
// settle() resolves once nothing is left to happen: every peer's inbound queue is handled, no frame
// is queued or in flight in any send window (a frame stays "in flight" until the bus delivered it),
// and that still holds one bus turn later. A test that checks that something did NOT happen
// settles first and asserts then, instead of sleeping a while and hoping the while was long enough.
// It waits on no wall-clock time: only on the peers' own queues and the bus's delivery turns.
import type { PassnotePeer } from "../../clients/passnote/peer";

/** One turn of the bus (it delivers each frame in a macrotask of its own). */
const turn = () => new Promise<void>((r) => setTimeout(r, 0));

const busy = (peers: readonly PassnotePeer[]) => peers.some((p) => p.engine.pendingFrames() > 0);

/**
 * Resolves when `peers` have nothing left to send, deliver or handle. Throws when they still
 * exchange frames after `maxTurns` bus turns (an exchange that never ends is a defect).
 */
export async function settle(peers: readonly PassnotePeer[], { maxTurns = 5_000 } = {}): Promise<void> {
  let quiet = 0;
  for (let i = 0; i < maxTurns; i++) {
    await Promise.all(peers.map((p) => p.engine.idle()));
    quiet = busy(peers) ? 0 : quiet + 1;
    if (quiet === 2) return;
    await turn();
  }
  throw new Error(`the peers still exchange frames after ${maxTurns} bus turns`);
}

/** A clock a test moves by hand (the engine's `now`): time passes only when the test says so. */
export function manualClock(start = Date.now()) {
  let t = start;
  return {
    now: () => t,
    advance(ms: number): void {
      t += ms;
    },
  };
}
