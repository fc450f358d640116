// The frame bound holds at once, on every endpoint, joined or not (docs/hostile.md, "Before
// authentication, a socket is read little"): a Passnote socket that has not joined, sent `ping`s
// carrying extra keys (read, not auto-answered, so they spend its rate bucket) and then a text
// frame past the endpoint's bound, is closed with 1009 at once. The cause was the order: the rate
// limit came before the bound, so a frame past the bucket was never measured.
import { describe, expect, it } from "vitest";
import { CLOSE_CODES, COMMON_LIMITS, PASSNOTE_LIMITS } from "../../shared/limits";
import { roomKeys } from "../../shared/passnote/room";
import { randomBytes } from "../../shared/encoding";
import { openSocket } from "../helpers/worker-socket";

describe("the frame bound, before a join", () => {
  it("passnote.max_frame_bytes: an unjoined socket's pings with extra keys past its rate bucket, then a 1,051-byte leave frame: closed 1009 at once, not answered rate_limited", async () => {
    const keys = roomKeys(randomBytes(32));
    const s = await openSocket(`/passnote/v2/${keys.roomId}`);
    await s.next("challenge");
    // Pings with extra keys are not the runtime's auto-response: each is read, and they empty the
    // socket's bucket before it joins (unauthenticated_rate_burst); a frame past the bucket is
    // answered rate_limited, but one past the frame bound must still close at once.
    for (let i = 0; i < COMMON_LIMITS.unauthenticated_rate_burst + 1; i++) s.ws.send('{"__proto__":{"polluted":true},"type":"ping"}');
    const leave = JSON.stringify({ type: "leave", pad: "" });
    const big = leave.replace('"pad":""', `"pad":"${"x".repeat(1_051 - leave.length)}"`);
    expect(new TextEncoder().encode(big).length).toBe(1_051);
    expect(1_051).toBeGreaterThan(PASSNOTE_LIMITS.max_frame_bytes);
    s.ws.send(big);
    expect(await Promise.race([s.closed, new Promise((r) => setTimeout(() => r("still open"), 5_000))])).toBe(CLOSE_CODES.too_large);
  });
});
