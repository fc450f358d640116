// docs/hostile.md and "Rate limits that reset on reconnect need a per-client bound too":
// a client's new sockets to one object are rate-limited (HTTP 429), and a reconnecting client's
// socket takes over its last socket's message bucket and rate_limited count. The client is its
// address as the Worker can trust it (here cf-connecting-ip, as on Cloudflare).
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CLOSE_CODES, COMMON_LIMITS } from "../../shared/limits";
import { roomKeys, signJoin } from "../../shared/passnote/room";
import { randomBytes } from "../../shared/encoding";
import { TestSocket } from "../helpers/socket";
import { openSocket } from "../helpers/worker-socket";
import { waitFor } from "../helpers/wait";
import type { TestPassnoteRoom } from "./test-objects";
import { ownAddress } from "../helpers/client-address";

const newAddress = ownAddress;

function upgrade(path: string, address: string): Promise<Response> {
  return SELF.fetch(`http://relay.test${path}`, { headers: { Upgrade: "websocket", "cf-connecting-ip": address } });
}

const open = (path: string, address: string) => openSocket(path, { "cf-connecting-ip": address });

/**
 * Feeds the object `frames` frames it answers (not the auto-answered ping) from the socket of
 * `peer`, in one run with the rate limits' clock held still, so that its bucket does not refill
 * however loaded the machine is.
 */
async function flood(roomId: string, peer: string, frames: number): Promise<void> {
  const stub = env.PASSNOTE_ROOM.get(env.PASSNOTE_ROOM.idFromName(roomId));
  await runInDurableObject(stub, async (room: TestPassnoteRoom, state) => {
    const ws = state.getWebSockets().find((w) => (w.deserializeAttachment() as { peer?: string }).peer === peer)!;
    room.frozenAt = Date.now();
    try {
      for (let i = 0; i < frames && ws.readyState === WebSocket.OPEN; i++) await room.webSocketMessage(ws, '{"type":"ping","x":1}');
    } finally {
      room.frozenAt = undefined;
    }
  });
}

describe("per-client bounds across reconnects", () => {
  it("a client closed with 4029 that reconnects at once keeps its emptied bucket and its refusals: its first refused frame closes it again; another client starts fresh", async () => {
    const keys = roomKeys(randomBytes(32));
    const path = `/passnote/v2/${keys.roomId}`;
    const address = newAddress();
    // joined sockets: the message bucket a reconnect takes over (an unjoined socket has a smaller one of its own)
    const joined = async (from: string) => {
      const s = await open(path, from);
      const { challenge } = await s.next("challenge");
      s.send({ type: "join", sig: signJoin(keys, challenge) });
      const { peer } = await s.next("welcome");
      return { s, peer: peer as string };
    };
    const first = await joined(address);
    await flood(keys.roomId, first.peer, COMMON_LIMITS.rate_burst + COMMON_LIMITS.rate_limited_before_close);
    await waitFor(() => first.s.ofType("error").some((e) => /closing/.test(e.message)) || undefined, { what: "closing" });
    expect(await first.s.closed).toBe(CLOSE_CODES.rate_limited);

    const again = await joined(address);
    await flood(keys.roomId, again.peer, COMMON_LIMITS.rate_burst + 1);
    const err = await again.s.next("error");
    expect(err.code).toBe("rate_limited");
    expect(err.message).toMatch(/closing/);
    expect(await again.s.closed).toBe(CLOSE_CODES.rate_limited);

    const other = await joined(newAddress());
    await flood(keys.roomId, other.peer, COMMON_LIMITS.rate_burst);
    await waitFor(() => other.s.ofType("pong").length === COMMON_LIMITS.rate_burst || undefined, { what: "a burst of pongs" });
    expect(other.s.ofType("error")).toEqual([]);
    other.s.close();
  });

  it("shared mode (no trusted address): a socket closed with 4029 leaves nothing to the next one, which may be anyone's", async () => {
    const keys = roomKeys(randomBytes(32));
    const path = `/passnote/v2/${keys.roomId}`;
    const joined = async () => {
      const s = await openSocket(path);
      const { challenge } = await s.next("challenge");
      s.send({ type: "join", sig: signJoin(keys, challenge) });
      const { peer } = await s.next("welcome");
      return { s, peer: peer as string };
    };
    const flooder = await joined();
    await flood(keys.roomId, flooder.peer, COMMON_LIMITS.rate_burst + COMMON_LIMITS.rate_limited_before_close);
    expect(await flooder.s.closed).toBe(CLOSE_CODES.rate_limited);
    const next = await joined();
    await flood(keys.roomId, next.peer, COMMON_LIMITS.rate_burst);
    await waitFor(() => next.s.ofType("pong").length === COMMON_LIMITS.rate_burst || undefined, { what: "a burst of pongs" });
    expect(next.s.ofType("error")).toEqual([]);
    next.s.close();
  });

  it(`one client opens at most ${COMMON_LIMITS.client_connect_burst} sockets to one object at once (then ${COMMON_LIMITS.client_connects_per_second}/s): one more is HTTP 429 rate_limited with Retry-After; another client still connects`, async () => {
    const keys = roomKeys(randomBytes(32));
    const path = `/passnote/v2/${keys.roomId}`;
    const stub = env.PASSNOTE_ROOM.get(env.PASSNOTE_ROOM.idFromName(keys.roomId));
    const address = newAddress();
    const sockets: TestSocket[] = [];
    // the rate limits' clock held still: the bucket does not refill meanwhile, however loaded the machine is
    await runInDurableObject(stub, (room: TestPassnoteRoom) => {
      room.frozenAt = Date.now();
    });
    let refused: Response | undefined;
    try {
      for (let i = 0; i < COMMON_LIMITS.client_connect_burst + 1 && !refused; i++) {
        const res = await upgrade(path, address);
        if (res.status === 101) {
          res.webSocket!.accept();
          sockets.push(new TestSocket(res.webSocket as unknown as WebSocket));
        } else refused = res;
      }
    } finally {
      await runInDurableObject(stub, (room: TestPassnoteRoom) => {
        room.frozenAt = undefined;
      });
    }
    expect(sockets.length).toBe(COMMON_LIMITS.client_connect_burst);
    expect(refused?.status).toBe(429);
    expect(Number(refused!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(((await refused!.json()) as any).error.code).toBe("rate_limited");
    const other = await open(path, newAddress());
    await other.next("challenge");
    for (const s of [...sockets, other]) if (s.closeCode === undefined) s.close();
  });
});
