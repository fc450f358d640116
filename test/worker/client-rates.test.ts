// docs/hostile.md and "Rate limits that reset on reconnect need a per-client bound too":
// a client's new sockets to one object are rate-limited (HTTP 429), and a reconnecting client's
// socket takes over its last socket's message bucket and rate_limited count. The client is its
// address as the Worker can trust it (here cf-connecting-ip, as on Cloudflare).
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CLOSE_CODES, COMMON_LIMITS } from "../../shared/limits";
import { roomKeys } from "../../shared/passnote/room";
import { randomBytes } from "../../shared/encoding";
import { newUser } from "../helpers/tally";
import { TestSocket } from "../helpers/socket";
import { openSocket } from "../helpers/worker-socket";
import { waitFor } from "../helpers/wait";

let n = 0;
const newAddress = () => `198.51.100.${(n++ % 250) + 1}`;

function upgrade(path: string, address: string): Promise<Response> {
  return SELF.fetch(`http://relay.test${path}`, { headers: { Upgrade: "websocket", "cf-connecting-ip": address } });
}

const open = (path: string, address: string) => openSocket(path, { "cf-connecting-ip": address });

/** Sends unanswered-before-auth frames (not the auto-answered ping) until the socket is closed with 4029. */
async function floodUntilClosed(s: TestSocket): Promise<void> {
  for (let i = 0; i < COMMON_LIMITS.rate_burst * 3; i++) s.send('{"type":"ping","x":1}');
  await waitFor(() => s.ofType("error").some((e) => /closing/.test(e.message)) || undefined, { what: "closing" }).catch((e) => {
    throw new Error(`${e.message}: ${s.messages.length} messages, ${s.ofType("error").length} errors, close ${s.closeCode}`);
  });
}

describe("per-client bounds across reconnects", () => {
  it("a client closed with 4029 that reconnects at once keeps its emptied bucket and its refusals: its first refused frame closes it again; another client starts fresh", async () => {
    const path = `/passnote/v2/${roomKeys(randomBytes(32)).roomId}`;
    const address = newAddress();
    const first = await open(path, address);
    await first.next("challenge");
    await floodUntilClosed(first);
    expect(await first.closed).toBe(CLOSE_CODES.rate_limited);

    const again = await open(path, address);
    await again.next("challenge");
    for (let i = 0; i < 200; i++) again.send('{"type":"ping","x":1}');
    const err = await again.next("error");
    expect(err.code).toBe("rate_limited");
    expect(err.message).toMatch(/closing/);
    expect(await again.closed).toBe(CLOSE_CODES.rate_limited);

    const other = await open(path, newAddress());
    await other.next("challenge");
    for (let i = 0; i < 200; i++) other.send('{"type":"ping","x":1}');
    await waitFor(() => other.ofType("pong").length === 200 || undefined, { what: "200 pongs" });
    expect(other.ofType("error")).toEqual([]);
    other.close();
  });

  it(`one client opens at most ${COMMON_LIMITS.client_connect_burst} sockets to one object at once (then ${COMMON_LIMITS.client_connects_per_second}/s): one more is HTTP 429 rate_limited with Retry-After; another client still connects`, async () => {
    const path = `/tally/v1/${newUser().npub}`;
    const address = newAddress();
    const sockets: TestSocket[] = [];
    // the burst, and the few the rate grants meanwhile
    let refused: Response | undefined;
    for (let i = 0; i < COMMON_LIMITS.client_connect_burst + 40 && !refused; i++) {
      const res = await upgrade(path, address);
      if (res.status === 101) {
        res.webSocket!.accept();
        sockets.push(new TestSocket(res.webSocket as unknown as WebSocket));
      } else refused = res;
    }
    expect(sockets.length).toBeGreaterThanOrEqual(COMMON_LIMITS.client_connect_burst);
    expect(refused?.status).toBe(429);
    expect(Number(refused!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(((await refused!.json()) as any).error.code).toBe("rate_limited");
    const other = await open(path, newAddress());
    await other.next("challenge");
    for (const s of [...sockets, other]) if (s.closeCode === undefined) s.close();
  });
});
