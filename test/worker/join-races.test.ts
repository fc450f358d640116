// docs/hostile.md, "Parked sockets" and "Joins that await": a room's join awaits its signature
// check, and other events reach the object meanwhile. The socket is not crowded out while its
// join is checked, and what the join admits is decided afresh after the await, with no await
// between that check and the admission. The rooms' checks are held by the test subclasses
// (test/worker/test-objects.ts) so that each race happens every time.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { randomBytes } from "../../shared/encoding";
import { COMMON_LIMITS } from "../../shared/limits";
import { roomKeys, signJoin } from "../../shared/passnote/room";
import { codeRoom, codeSecret, newCode } from "../../shared/minca/code";
import { newP256Key } from "../../shared/minca/es256";
import { makeJoin } from "../../shared/minca/room";
import type { TestSocket } from "../helpers/socket";
import { openSocket } from "../helpers/worker-socket";
import { waitFor } from "../helpers/wait";
import { steppingClock } from "./held-clock";
import type { TestMincaRoom, TestPassnoteRoom } from "./test-objects";

interface Held {
  holdJoins(): Promise<void>;
  releaseJoins(): Promise<number>;
  heldJoins(): Promise<number>;
}

interface Room {
  name: string;
  /** A fresh room: its path, the object (to hold its joins), and a valid join for a challenge. */
  make(): { path: string; stub: Held; join: (challenge: string) => Promise<unknown> };
}

const rooms: Room[] = [
  {
    name: "Passnote room",
    make() {
      const keys = roomKeys(randomBytes(32));
      const stub = env.PASSNOTE_ROOM.get(env.PASSNOTE_ROOM.idFromName(keys.roomId)) as unknown as DurableObjectStub<TestPassnoteRoom>;
      return {
        path: `/passnote/v2/${keys.roomId}`,
        stub: stub as unknown as Held,
        join: async (c) => ({ type: "join", sig: signJoin(keys, c) }),
      };
    },
  },
  {
    name: "Minca code room",
    make() {
      const room = codeRoom(codeSecret(newCode()));
      const stub = env.MINCA_ROOM.get(env.MINCA_ROOM.idFromName(room)) as unknown as DurableObjectStub<TestMincaRoom>;
      return { path: `/minca/v1/rooms/${room}`, stub: stub as unknown as Held, join: async (c) => makeJoin(await newP256Key(), room, c) };
    },
  },
];

const crowdedOut = (s: TestSocket) =>
  s.ofType("error").some((m) => m.code === "rate_limited" && /too many unauthenticated/.test(m.message));

async function challenged(path: string): Promise<{ s: TestSocket; challenge: string }> {
  const s = await openSocket(path);
  const { challenge } = await s.next("challenge");
  return { s, challenge };
}

describe("a join that awaits its check", () => {
  for (const r of rooms) {
    it(`${r.name}: a socket whose join is being checked is never crowded out by parked sockets (shared mode); it joins once the check ends`, async () => {
      const { path, stub, join } = r.make();
      await stub.holdJoins();
      // each socket opens a grace after the one before (the object's held clock): all but the newest may be crowded out
      const step = steppingClock(stub as unknown as DurableObjectStub);
      await step();
      const { s, challenge } = await challenged(path);
      s.send(await join(challenge));
      await waitFor(async () => ((await stub.heldJoins()) === 1 ? true : undefined), { what: "the join held" });
      const parked: TestSocket[] = [];
      for (let i = 0; i < COMMON_LIMITS.max_unauthenticated_sockets_per_object; i++) {
        await step();
        parked.push((await challenged(path)).s);
      }
      // one of the parked made room (the oldest of them), never the socket being checked
      await waitFor(() => crowdedOut(parked[0]) || undefined, { what: "the oldest parked crowded out" });
      expect(crowdedOut(s)).toBe(false);
      expect(s.closeCode).toBeUndefined();
      expect(await stub.releaseJoins()).toBe(1);
      await s.next("welcome");
      for (const p of [s, ...parked]) if (p.closeCode === undefined) p.close();
    });

    it(`${r.name}: two joins on one socket while the first is checked: one welcome, the other already_joined`, async () => {
      const { path, stub, join } = r.make();
      await stub.holdJoins();
      const { s, challenge } = await challenged(path);
      const frame = await join(challenge);
      s.send(frame);
      s.send(frame);
      await waitFor(async () => ((await stub.heldJoins()) === 2 ? true : undefined), { what: "both joins held" });
      expect(await stub.releaseJoins()).toBe(2);
      const err = await s.next("error");
      expect(err.code).toBe("already_joined");
      expect(s.ofType("welcome")).toHaveLength(1);
      s.close();
    });
  }

  it("Passnote room: a socket that closes while its join is checked is not announced to the room afterwards (no peer that never leaves)", async () => {
    const { path, stub, join } = rooms[0].make();
    const a = await challenged(path);
    a.s.send(await join(a.challenge));
    await a.s.next("welcome");
    await stub.holdJoins();
    const ghost = await challenged(path);
    ghost.s.send(await join(ghost.challenge));
    await waitFor(async () => ((await stub.heldJoins()) === 1 ? true : undefined), { what: "the join held" });
    ghost.s.close();
    await ghost.s.closed; // the room answered the close: it has seen it
    expect(await stub.releaseJoins()).toBe(1);
    const c = await challenged(path);
    c.s.send(await join(c.challenge));
    const welcome = await c.s.next("welcome");
    const joined = await a.s.next("join");
    // the first join the room told `a` of is `c`'s: nothing of the socket that closed
    expect(joined.peer).toBe(welcome.peer);
    expect(welcome.peers).toHaveLength(1);
    a.s.close();
    c.s.close();
  });
});
