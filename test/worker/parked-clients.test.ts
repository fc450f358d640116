// docs/hostile.md, "Shared mode" and "Parked sockets": with no trusted client address every client
// is the shared one, and per-client buckets do not apply (one bucket for everyone let anyone lock
// a user's devices out); with one (here cf-connecting-ip, as on Cloudflare), parked sockets are
// bounded per client and object and per client across the relay, a client crowds out its own
// first, and before authentication only small frames are read, at a lower rate.
import { SELF, env, runInDurableObject } from "cloudflare:test";
import type { MincaMailbox } from "../../durable-objects/mailbox/minca-mailbox";
import { SHARED_CLIENT } from "../../server/object-headers";
import { describe, expect, it } from "vitest";
import { randomBytes } from "../../shared/encoding";
import { CLOSE_CODES, COMMON_LIMITS, MAILBOX_LIMITS } from "../../shared/limits";
import { roomKeys } from "../../shared/passnote/room";
import { makeAuthEvent } from "../../shared/tally/auth";
import { newUser } from "../helpers/tally";
import { TestSocket } from "../helpers/socket";
import { openSocket } from "../helpers/worker-socket";
import { waitFor } from "../helpers/wait";
import { steppingClock } from "./held-clock";
import { ownAddress } from "../helpers/client-address";

const newAddress = ownAddress;
const from = (address: string) => ({ "cf-connecting-ip": address });
const crowdedOut = (s: TestSocket) =>
  s.ofType("error").some((m) => m.code === "rate_limited" && /too many unauthenticated/.test(m.message));
const roomPath = () => `/passnote/v2/${roomKeys(randomBytes(32)).roomId}`;
const roomOf = (path: string) => env.PASSNOTE_ROOM.get(env.PASSNOTE_ROOM.idFromName(path.split("/").pop()!));

async function parked(path: string, headers: Record<string, string> = {}): Promise<TestSocket> {
  const s = await openSocket(path, headers);
  await s.next("challenge");
  return s;
}

function closeAll(sockets: TestSocket[]): void {
  for (const s of sockets) if (s.closeCode === undefined) s.close();
}

describe("shared mode (no trusted client address): per-client buckets do not apply", () => {
  it(`${COMMON_LIMITS.client_connect_burst + 36} upgrades in a row to one npub are all accepted (no connect bucket for everyone), and the user's device registers`, async () => {
    const user = newUser();
    const path = `/tally/v1/${user.npub}`;
    const flood: TestSocket[] = [];
    for (let i = 0; i < COMMON_LIMITS.client_connect_burst + 36; i++) {
      const res = await SELF.fetch(`http://relay.test${path}`, { headers: { Upgrade: "websocket" } });
      expect(res.status, `upgrade ${i + 1}`).toBe(101);
      res.webSocket!.accept();
      flood.push(new TestSocket(res.webSocket as unknown as WebSocket));
    }
    const device = await openSocket(path);
    const { challenge } = await device.next("challenge");
    device.send({
      type: "register",
      user_id: user.npub,
      auth: makeAuthEvent({ secretKey: user.secretKey, challenge, relayUrl: "ws://relay.test" }),
    });
    await device.next("registered");
    closeAll([device, ...flood]);
  });

  it(`more than mailbox.write_burst (${MAILBOX_LIMITS.write_burst}) POSTs to one topic from the shared client are all stored; from a trusted address the bucket holds`, async () => {
    const topic = `shared-${Array.from(randomBytes(12), (b) => b.toString(16).padStart(2, "0")).join("")}`;
    const stub = env.MINCA_MAILBOX.get(env.MINCA_MAILBOX.idFromName(topic));
    const until = Math.floor(Date.now() / 1000) + 3_600;
    const trusted = ownAddress();
    // in one run, so that the bucket barely refills however loaded the machine is
    const statuses = await runInDurableObject(stub, async (mailbox: MincaMailbox) => {
      const out = { shared: [] as boolean[], trusted: [] as boolean[] };
      for (let i = 0; i < MAILBOX_LIMITS.write_burst + 10; i++)
        out.shared.push((await mailbox.post(new Uint8Array([i & 0xff]), until, SHARED_CLIENT)).ok);
      for (let i = 0; i < MAILBOX_LIMITS.write_burst + 10; i++)
        out.trusted.push((await mailbox.post(new Uint8Array([i & 0xff]), until, trusted)).ok);
      return out;
    });
    expect(statuses.shared.every(Boolean)).toBe(true);
    expect(statuses.trusted.filter((ok) => !ok).length).toBeGreaterThan(0);
  });
});

describe("parked sockets per client (trusted client addresses)", () => {
  const perObject = COMMON_LIMITS.max_unauthenticated_sockets_per_client_per_object;

  it(`one client keeps at most ${perObject} parked sockets on one object: one more closes that client's own oldest with 1013, never another client's`, async () => {
    const path = roomPath();
    const other = await parked(path, from(newAddress()));
    const address = newAddress();
    const mine: TestSocket[] = [];
    for (let i = 0; i < perObject + 1; i++) mine.push(await parked(path, from(address)));
    await waitFor(() => crowdedOut(mine[0]) || undefined, { what: "the client's own oldest crowded out" });
    expect(await mine[0].closed).toBe(CLOSE_CODES.try_again_later);
    expect(mine.slice(1).filter(crowdedOut)).toEqual([]);
    expect(crowdedOut(other)).toBe(false);
    closeAll([other, ...mine]);
  });

  it(`an object full of parked sockets (${COMMON_LIMITS.max_unauthenticated_sockets_per_object}) makes room by closing a socket of the client holding the most, not the oldest socket of a client holding one`, async () => {
    const path = roomPath();
    // every socket here is past its grace (common.unauthenticated_grace_ms) when the last arrives
    const step = steppingClock(roomOf(path));
    await step();
    const first = await parked(path, from(newAddress())); // the oldest of all
    const heavy: TestSocket[] = [];
    const heavyAddress = newAddress();
    for (let i = 0; i < perObject; i++) {
      await step(1);
      heavy.push(await parked(path, from(heavyAddress)));
    }
    const singles: TestSocket[] = [];
    while (1 + heavy.length + singles.length < COMMON_LIMITS.max_unauthenticated_sockets_per_object) {
      await step(1);
      singles.push(await parked(path, from(newAddress())));
    }
    await step();
    const arriving = await parked(path, from(newAddress()));
    await waitFor(() => crowdedOut(heavy[0]) || undefined, { what: "the heavy client's oldest crowded out" });
    expect(crowdedOut(first)).toBe(false);
    expect([...singles, ...heavy.slice(1)].filter(crowdedOut)).toEqual([]);
    closeAll([first, arriving, ...heavy, ...singles]);
  });

  it(`one client keeps at most ${COMMON_LIMITS.max_unauthenticated_sockets_per_client} parked sockets across the relay: one more is HTTP 429 with Retry-After before a socket exists; another client is served; a socket that leaves makes room`, async () => {
    const address = newAddress();
    const held: TestSocket[] = [];
    const rooms = Math.ceil(COMMON_LIMITS.max_unauthenticated_sockets_per_client / perObject);
    for (let r = 0; r < rooms; r++) {
      const path = roomPath();
      for (let i = 0; i < perObject && held.length < COMMON_LIMITS.max_unauthenticated_sockets_per_client; i++)
        held.push(await parked(path, from(address)));
    }
    const path = roomPath();
    const refused = await SELF.fetch(`http://relay.test${path}`, { headers: { Upgrade: "websocket", ...from(address) } });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(((await refused.json()) as any).error.code).toBe("rate_limited");
    const another = await parked(path, from(newAddress()));
    held[0].close();
    await held[0].closed;
    const again = await parked(path, from(address));
    closeAll([...held, another, again]);
  });
});

describe("before authentication: small frames, at a lower rate", () => {
  it(`a frame over ${COMMON_LIMITS.max_unauthenticated_frame_bytes} bytes before register closes the socket with 1009 (a register fits)`, async () => {
    const s = await parked(`/tally/v1/${newUser().npub}`);
    s.send(JSON.stringify({ type: "ping", pad: "x".repeat(COMMON_LIMITS.max_unauthenticated_frame_bytes) }));
    expect(await s.closed).toBe(CLOSE_CODES.too_large);
  });

  it(`more than ${COMMON_LIMITS.unauthenticated_rate_burst} frames at once before join are answered rate_limited`, async () => {
    const s = await parked(roomPath());
    for (let i = 0; i < COMMON_LIMITS.unauthenticated_rate_burst + 4; i++) s.send('{"type":"ping","x":1}');
    const err = await s.next("error");
    expect(err.code).toBe("rate_limited");
    expect(s.ofType("pong").length).toBeLessThanOrEqual(COMMON_LIMITS.unauthenticated_rate_burst + 1);
    s.close();
  });
});
