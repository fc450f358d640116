// docs/hostile.md, "Parked sockets": common.unauthenticated_grace_ms. In shared mode nothing tells
// a flood of sockets that never authenticate from a device that will, so an object crowding out
// its oldest parked socket closed a device answering its challenge after 250 ms every time
// 40 upgrades a second reached its npub. Now a socket in its grace is never crowded out: past the
// per-object bound, new sockets are accepted up to a ceiling, then refused (429) until the oldest
// leaves its grace. The objects' clock is held and moved by the test (25 ms per upgrade: 40/s).
import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CLOSE_CODES, COMMON_LIMITS, MINCA_ROOM_LIMITS } from "../../shared/limits";
import { codeRoom, codeSecret, newCode } from "../../shared/minca/code";
import { makeAuthEvent } from "../../shared/tally/auth";
import { newUser } from "../helpers/tally";
import { TestSocket } from "../helpers/socket";
import { openSocket } from "../helpers/worker-socket";
import { waitFor } from "../helpers/wait";
import { holdClock as setClock } from "./held-clock";
import type { TestMincaRoom, TestTallyUser } from "./test-objects";

const grace = COMMON_LIMITS.unauthenticated_grace_ms;
const crowdedOut = (s: TestSocket) =>
  s.ofType("error").some((m) => m.code === "rate_limited" && /too many unauthenticated/.test(m.message));

/** An upgrade with no client address (shared mode): the socket, or the refusal. */
async function upgrade(path: string): Promise<TestSocket | Response> {
  const res = await SELF.fetch(`http://relay.test${path}`, { headers: { Upgrade: "websocket" } });
  if (res.status !== 101) return res;
  res.webSocket!.accept();
  return new TestSocket(res.webSocket as unknown as WebSocket);
}

describe("common.unauthenticated_grace_ms: a socket is never crowded out before it could answer", () => {
  it("shared mode: a device answering its challenge after 250 ms registers while 40 upgrades a second flood its npub; the flood's sockets past their grace make room, its new ones wait their turn", async () => {
    const user = newUser();
    const path = `/tally/v1/${user.npub}`;
    const stub = env.TALLY_USER.get(env.TALLY_USER.idFromName(user.hex)) as unknown as DurableObjectStub<TestTallyUser>;
    const t0 = Date.now();
    await setClock(stub, t0);
    const flood: TestSocket[] = [];
    // the flood has run for a second before the device comes
    for (let i = 0; i < 40; i++) {
      await setClock(stub, t0 + i * 25);
      const s = await upgrade(path);
      expect(s).toBeInstanceOf(TestSocket);
      flood.push(s as TestSocket);
    }
    const start = t0 + 40 * 25;
    await setClock(stub, start);
    const device = await openSocket(path);
    const { challenge } = await device.next("challenge");
    // 250 ms of flood (10 upgrades) before the device's answer, then two seconds more
    for (let i = 1; i <= 90; i++) {
      await setClock(stub, start + i * 25);
      const s = await upgrade(path);
      expect(s, `flood upgrade ${i} (the object's ceiling is not reached at 40/s)`).toBeInstanceOf(TestSocket);
      flood.push(s as TestSocket);
      if (i === 10) {
        expect(crowdedOut(device), "the device crowded out before its answer").toBe(false);
        device.send({
          type: "register",
          user_id: user.npub,
          auth: makeAuthEvent({ secretKey: user.secretKey, challenge, relayUrl: "ws://relay.test" }),
        });
        await device.next("registered");
      }
    }
    device.send({ type: "ping" });
    await device.next("pong");
    expect(device.closeCode).toBeUndefined();
    // the flood crowded out its own: its sockets past their grace, never one within it
    await waitFor(() => crowdedOut(flood[0]) || undefined, { what: "the flood's oldest crowded out" });
    const last = flood.length - 1;
    expect(flood.slice(last - Math.floor(grace / 25) + 1).filter(crowdedOut)).toEqual([]);
    for (const s of [device, ...flood]) if (s.closeCode === undefined) s.close();
  });

  it(`past the ceiling (a Minca code room keeps ${MINCA_ROOM_LIMITS.max_sockets - MINCA_ROOM_LIMITS.max_peers}, leaving its peers room), an upgrade is 429 with Retry-After until the oldest leaves its grace; then it crowds the oldest out`, async () => {
    const room = codeRoom(codeSecret(newCode()));
    const path = `/minca/v1/rooms/${room}`;
    const stub = env.MINCA_ROOM.get(env.MINCA_ROOM.idFromName(room)) as unknown as DurableObjectStub<TestMincaRoom>;
    const t0 = Date.now();
    await setClock(stub, t0);
    const parked: TestSocket[] = [];
    for (let i = 0; i < MINCA_ROOM_LIMITS.max_sockets - MINCA_ROOM_LIMITS.max_peers; i++) {
      await setClock(stub, t0 + i);
      const s = await openSocket(path);
      await s.next("challenge");
      parked.push(s);
    }
    await setClock(stub, t0 + grace - 500);
    const refused = await upgrade(path);
    expect(refused).toBeInstanceOf(Response);
    expect((refused as Response).status).toBe(429);
    expect(Number((refused as Response).headers.get("retry-after"))).toBe(1);
    expect(parked.filter(crowdedOut)).toEqual([]);
    await setClock(stub, t0 + grace);
    const next = await openSocket(path);
    await next.next("challenge");
    await waitFor(() => crowdedOut(parked[0]) || undefined, { what: "the oldest crowded out" });
    expect(await parked[0].closed).toBe(CLOSE_CODES.try_again_later);
    for (const s of [next, ...parked]) if (s.closeCode === undefined) s.close();
  });
});
