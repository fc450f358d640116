// docs/hostile.md and "Parked sockets": npubs and room ids are public, so anyone can
// open sockets to an object that never authenticate. An object keeps at most
// common.max_unauthenticated_sockets_per_object of them; one more closes the oldest with 1013, and
// a real device still registers / joins. Each socket here opens a grace
// (common.unauthenticated_grace_ms, parked-grace.test.ts) after the one before, on the object's held
// clock, so the older ones may be crowded out.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { randomBytes } from "../../shared/encoding";
import { CLOSE_CODES, COMMON_LIMITS } from "../../shared/limits";
import { roomKeys, signJoin } from "../../shared/passnote/room";
import { codeRoom, codeSecret, newCode } from "../../shared/minca/code";
import { newP256Key } from "../../shared/minca/es256";
import { makeJoin } from "../../shared/minca/room";
import { makeAuthEvent } from "../../shared/tally/auth";
import { newUser } from "../helpers/tally";
import type { TestSocket } from "../helpers/socket";
import { openSocket } from "../helpers/worker-socket";
import { waitFor } from "../helpers/wait";
import { steppingClock } from "./held-clock";

const open = (path: string) => openSocket(path);

interface Endpoint {
  name: string;
  path: () => string;
  /** The object behind the path (its clock is held: each socket opens a grace after the one before). */
  stub: () => DurableObjectStub;
  /** Authenticates `s` (after its challenge) and waits for the relay's answer. */
  authenticate: (s: TestSocket, path: string, challenge: string) => Promise<void>;
}

const user = newUser();
const passnote = roomKeys(randomBytes(32));
const mincaRoom = codeRoom(codeSecret(newCode()));
const endpoints: Endpoint[] = [
  {
    name: "Tally user",
    path: () => `/tally/v1/${user.npub}`,
    stub: () => env.TALLY_USER.get(env.TALLY_USER.idFromName(user.hex)),
    async authenticate(s, _path, challenge) {
      s.send({
        type: "register",
        user_id: user.npub,
        auth: makeAuthEvent({ secretKey: user.secretKey, challenge, relayUrl: "ws://relay.test" }),
      });
      await s.next("registered");
    },
  },
  {
    name: "Passnote room",
    path: () => `/passnote/v2/${passnote.roomId}`,
    stub: () => env.PASSNOTE_ROOM.get(env.PASSNOTE_ROOM.idFromName(passnote.roomId)),
    async authenticate(s, _path, challenge) {
      s.send({ type: "join", sig: signJoin(passnote, challenge) });
      await s.next("welcome");
    },
  },
  {
    name: "Minca code room",
    path: () => `/minca/v1/rooms/${mincaRoom}`,
    stub: () => env.MINCA_ROOM.get(env.MINCA_ROOM.idFromName(mincaRoom)),
    async authenticate(s, path, challenge) {
      s.send(await makeJoin(await newP256Key(), path.split("/").pop()!, challenge));
      await s.next("welcome");
    },
  },
];

describe("common.max_unauthenticated_sockets_per_object: parked sockets never crowd out a real device", () => {
  const cap = COMMON_LIMITS.max_unauthenticated_sockets_per_object;
  for (const e of endpoints) {
    it(`${e.name}: ${cap} + 1 sockets that never authenticate close the oldest with 1013 (try again later); the others stay; a real device still authenticates`, async () => {
      const path = e.path();
      const step = steppingClock(e.stub());
      const parked: TestSocket[] = [];
      const crowdedOut = (s: TestSocket) =>
        s.ofType("error").some((m) => m.code === "rate_limited" && /too many unauthenticated/.test(m.message));
      for (let i = 0; i < cap + 1; i++) {
        await step();
        const s = await open(path);
        await s.next("challenge");
        parked.push(s);
      }
      await waitFor(() => crowdedOut(parked[0]) || undefined, { what: "the oldest crowded out" });
      // the newer ones are still open and untouched
      expect(parked.slice(1).filter(crowdedOut)).toEqual([]);
      // a real device arrives (crowding out the next oldest) and authenticates
      await step();
      const real = await open(path);
      const { challenge } = await real.next("challenge");
      await e.authenticate(real, path, challenge);
      expect(crowdedOut(parked[1])).toBe(true);
      expect(parked.slice(2).filter(crowdedOut)).toEqual([]);
      // authenticated sockets do not count: `cap` more parked sockets crowd out the older parked ones, never the real one
      for (let i = 0; i < cap; i++) {
        await step();
        const s = await open(path);
        await s.next("challenge");
        parked.push(s);
      }
      await waitFor(() => parked.slice(2, 1 + cap).every(crowdedOut) || undefined, { what: "the older parked crowded out" });
      expect(parked.slice(1 + cap).filter(crowdedOut)).toEqual([]);
      real.send({ type: "ping" });
      await real.next("pong");
      expect(real.ofType("error")).toEqual([]);
      // the close itself: 1013, after which clients reconnect (4001 would make them give up)
      expect(await parked[0].closed).toBe(CLOSE_CODES.try_again_later);
      for (const s of [real, ...parked]) if (s.closeCode === undefined) s.close();
    });
  }
});
