// The program's state machine where the room itself goes away: cases the in-memory bus and the
// relay cannot both stage, so they are here rather than in the contract suite.
import { describe, expect, it } from "vitest";
import { MemoryBus } from "../../../../../clients/minca/memory-bus";
import type { JoinRoom, RoomEvent } from "../../../../../clients/minca/protocol/transport";
import { programAndHome } from "../../../../helpers/minca";
import { waitFor } from "../../../../helpers/wait";

/** A join whose transports can be told the room closed (as the relay does at 15 minutes: 4008). */
function closable(join: JoinRoom) {
  const listeners: Array<(e: RoomEvent) => void> = [];
  const wrapped: JoinRoom = async (room) => {
    const t = await join(room);
    return {
      ...t,
      did: t.did,
      peers: t.peers,
      listen: (l) => {
        listeners.push(l);
        return t.listen(l);
      },
    };
  };
  return {
    join: wrapped,
    closeRoom: () => {
      for (const l of listeners) l({ kind: "closed", code: 4008, reason: "room expired" });
    },
  };
}

describe("the program when its room closes", () => {
  it("before an answer, it fails, keeping nothing", async () => {
    const bus = new MemoryBus();
    const room = closable(bus.join);
    // The person never decides.
    const pair = await programAndHome(bus.join, { programJoin: room.join, home: { approve: () => new Promise(() => {}) } });
    await waitFor(() => pair.program.state === "heard", { what: "heard" });
    room.closeRoom();
    expect(await pair.program.outcome).toEqual({ ok: false, reason: "closed", message: "the room closed (4008)" });
    pair.home.close();
  });

  it("holding a checked grant, it still keeps it once the person gives the matching check", async () => {
    const bus = new MemoryBus();
    const room = closable(bus.join);
    const pair = await programAndHome(bus.join, { programJoin: room.join, typesCheck: false });
    await waitFor(() => pair.program.state === "answered", { what: "answered" });
    room.closeRoom();
    await new Promise((r) => setTimeout(r, 20));
    expect(pair.program.state).toBe("answered");
    expect(pair.program.enterCheck(pair.program.expectedCheck!)).toBe(true);
    expect(await pair.program.outcome).toMatchObject({ ok: true });
  });
});
