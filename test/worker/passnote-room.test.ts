// docs/passnote.md: Passnote sync rooms, inside workerd. The room proves membership with the
// room key, reports peers, and routes binary frames by 8-byte peer id, byte-exact and in order.
import { SELF, env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { roomKeys, signJoin, joinPeerFrame, BROADCAST, type RoomKeys } from "../../shared/passnote/room";
import { randomBytes } from "../../shared/encoding";
import { CLOSE_CODES, COMMON_LIMITS, PASSNOTE_LIMITS } from "../../shared/limits";
import { TestSocket } from "../helpers/socket";
import { waitFor } from "../helpers/wait";
import type { TestPassnoteRoom } from "./test-objects";

const base = "http://relay.test";

function group(): RoomKeys {
  return roomKeys(randomBytes(32));
}

async function open(room: string): Promise<TestSocket> {
  const res = await SELF.fetch(`${base}/passnote/v2/${room}`, { headers: { upgrade: "websocket" } });
  expect(res.status).toBe(101);
  const ws = res.webSocket!;
  ws.accept();
  return new TestSocket(ws as unknown as WebSocket);
}

async function joined(keys: RoomKeys): Promise<{ s: TestSocket; peer: string; peers: string[] }> {
  const s = await open(keys.roomId);
  const { challenge } = await s.next("challenge");
  s.send({ type: "join", sig: signJoin(keys, challenge) });
  const w = await s.next("welcome");
  return { s, peer: w.peer, peers: w.peers };
}

const bytes = (...b: number[]) => new Uint8Array(b);

describe("docs/passnote.md: sync room endpoint", () => {
  it("GET /passnote/v2/<room> refuses a malformed room id (400), a missing upgrade (426), other methods (405)", async () => {
    const bad = await SELF.fetch(`${base}/passnote/v2/not-a-room`, { headers: { upgrade: "websocket" } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.code).toBe("bad_request");
    const room = group().roomId;
    const plain = await SELF.fetch(`${base}/passnote/v2/${room}`);
    expect(plain.status).toBe(426);
    expect(((await plain.json()) as any).error.code).toBe("upgrade_required");
    const post = await SELF.fetch(`${base}/passnote/v2/${room}`, { method: "POST" });
    expect(post.status).toBe(405);
  });

  it("the information document lists the passnote endpoint and its bounds", async () => {
    const info = (await (await SELF.fetch(`${base}/`, { headers: { accept: "application/json" } })).json()) as any;
    expect(info.protocols.passnote.endpoint).toBe("/passnote/v2/<room>");
    expect(info.limits.passnote.max_peers_per_room).toBe(64);
    expect(info.limits.passnote.max_binary_bytes).toBe(1_048_576);
  });
});

describe("docs/passnote.md: join proof, welcome, join and leave reports", () => {
  it("a device that signs the challenge with the room key is welcomed with its peer id and the peers present; the others hear join", async () => {
    const keys = group();
    const a = await joined(keys);
    expect(a.peer).toMatch(/^[0-9a-f]{16}$/);
    expect(a.peers).toEqual([]);
    const b = await joined(keys);
    expect(b.peers).toEqual([a.peer]);
    expect(await a.s.next("join")).toEqual({ type: "join", peer: b.peer });
    b.s.close();
    expect(await a.s.next("leave")).toEqual({ type: "leave", peer: b.peer });
  });

  it("a device of another group (signature under another key) is refused with auth_failed and close 4001", async () => {
    const keys = group();
    const s = await open(keys.roomId);
    const { challenge } = await s.next("challenge");
    s.send({ type: "join", sig: signJoin(group(), challenge) });
    expect((await s.next("error")).code).toBe("auth_failed");
    expect(await s.closed).toBe(4001);
  });

  it("a socket that has not joined within 10 s is closed with 4001 (by the auth timer); joined peers stay", async () => {
    const keys = group();
    const a = await joined(keys);
    const s = await open(keys.roomId);
    await s.next("challenge");
    const stub = env.PASSNOTE_ROOM.get(env.PASSNOTE_ROOM.idFromName(keys.roomId));
    expect(await runInDurableObject(stub, (room: TestPassnoteRoom) => room.closeUnauthenticated(Date.now() + 11_000))).toBe(1);
    expect(await s.closed).toBe(4001);
    expect(a.s.closeCode).toBeUndefined();
  });

  it("before joining, binary frames are answered auth_failed and nothing is routed", async () => {
    const keys = group();
    const a = await joined(keys);
    const s = await open(keys.roomId);
    await s.next("challenge");
    s.ws.send(joinPeerFrame(BROADCAST, bytes(1, 2, 3)));
    expect((await s.next("error")).code).toBe("auth_failed");
    expect(a.s.binary).toEqual([]);
  });

  it("a malformed join is invalid_message and the connection stays open", async () => {
    const s = await open(group().roomId);
    await s.next("challenge");
    s.send({ type: "join", sig: "short" });
    expect((await s.next("error")).code).toBe("invalid_message");
    s.send("not json");
    expect(s.closeCode).toBeUndefined();
  });

  it("at most 64 peers per room: the 65th is refused with room_full and close 1008", async () => {
    const keys = group();
    const all = [];
    for (let i = 0; i < PASSNOTE_LIMITS.max_peers_per_room; i++) all.push(await joined(keys));
    const s = await open(keys.roomId);
    const { challenge } = await s.next("challenge");
    s.send({ type: "join", sig: signJoin(keys, challenge) });
    expect((await s.next("error")).code).toBe("room_full");
    expect(await s.closed).toBe(1008);
    for (const p of all) p.s.close();
  });
});

describe("docs/passnote.md: binary frames routed by 8-byte peer id", () => {
  it("unicast reaches exactly the named peer, prefixed with the sender's id, byte-exact", async () => {
    const keys = group();
    const a = await joined(keys);
    const b = await joined(keys);
    const c = await joined(keys);
    const frame = randomBytes(300);
    a.s.ws.send(joinPeerFrame(b.peer, frame));
    await waitFor(() => b.s.binary.length === 1);
    expect(b.s.binary[0]).toEqual(joinPeerFrame(a.peer, frame));
    expect(c.s.binary).toEqual([]);
  });

  it("the all-zero destination reaches every other peer, not the sender", async () => {
    const keys = group();
    const a = await joined(keys);
    const b = await joined(keys);
    const c = await joined(keys);
    a.s.ws.send(joinPeerFrame(BROADCAST, bytes(9, 8, 7)));
    await waitFor(() => b.s.binary.length === 1 && c.s.binary.length === 1);
    expect(b.s.binary[0]).toEqual(joinPeerFrame(a.peer, bytes(9, 8, 7)));
    expect(c.s.binary[0]).toEqual(joinPeerFrame(a.peer, bytes(9, 8, 7)));
    expect(a.s.binary).toEqual([]);
  });

  it("frames from one sender reach each receiver in the order sent", async () => {
    const keys = group();
    const a = await joined(keys);
    const b = await joined(keys);
    for (let i = 0; i < 100; i++) a.s.ws.send(joinPeerFrame(i % 2 ? BROADCAST : b.peer, bytes(i)));
    await waitFor(() => b.s.binary.length === 100);
    expect(b.s.binary.map((f) => f[8])).toEqual([...Array(100).keys()]);
  });

  it("a binary message shorter than 8 bytes is invalid_message; an absent peer is peer_unavailable; the socket stays open", async () => {
    const keys = group();
    const a = await joined(keys);
    a.s.ws.send(bytes(1, 2, 3));
    expect((await a.s.next("error")).code).toBe("invalid_message");
    a.s.ws.send(joinPeerFrame("0123456789abcdef", bytes(1)));
    expect((await a.s.next("error")).code).toBe("peer_unavailable");
    a.s.ws.send(joinPeerFrame(a.peer, bytes(1)));
    expect((await a.s.next("error")).code).toBe("peer_unavailable");
    expect(a.s.closeCode).toBeUndefined();
  });

  it("a binary message over 1 MiB closes the socket with 1009", async () => {
    const keys = group();
    const a = await joined(keys);
    const b = await joined(keys);
    a.s.ws.send(new Uint8Array(PASSNOTE_LIMITS.max_binary_bytes + 1));
    expect(await a.s.closed).toBe(1009);
    expect(b.s.binary).toEqual([]);
    expect(await b.s.next("leave")).toEqual({ type: "leave", peer: a.peer });
  });

  it("hibernation: a room evicted between messages still knows its peers, routes and reports leave", async () => {
    const keys = group();
    const a = await joined(keys);
    const b = await joined(keys);
    const stub = env.PASSNOTE_ROOM.get(env.PASSNOTE_ROOM.idFromName(keys.roomId));
    await evictDurableObject(stub);
    a.s.ws.send(joinPeerFrame(b.peer, bytes(42)));
    await waitFor(() => b.s.binary.length === 1);
    expect(b.s.binary[0]).toEqual(joinPeerFrame(a.peer, bytes(42)));
    const peerIds = await runInDurableObject(stub, (_room, state) =>
      state.getWebSockets().flatMap((ws) => (ws.deserializeAttachment() as { peer?: string } | null)?.peer ?? []),
    );
    expect(peerIds.sort()).toEqual([a.peer, b.peer].sort());
    a.s.close();
    expect(await b.s.next("leave")).toEqual({ type: "leave", peer: a.peer });
  });
});

describe("docs/hostile.md and 5: bounds and errors on a sync room socket", () => {
  it("an unknown text message type is unknown_type and the socket stays open", async () => {
    const a = await joined(group());
    a.s.send({ type: "frobnicate" });
    expect((await a.s.next("error")).code).toBe("unknown_type");
    a.s.send({ type: "join", sig: "A".repeat(86) });
    expect((await a.s.next("error")).code).toBe("already_joined");
    expect(a.s.closeCode).toBeUndefined();
  });

  it("a text frame over 1 KiB closes the socket with 1009", async () => {
    const s = await open(group().roomId);
    await s.next("challenge");
    s.send({ type: "join", sig: "A".repeat(PASSNOTE_LIMITS.max_frame_bytes) });
    expect(await s.closed).toBe(1009);
  });

  it("per-peer rate limit: a peer that floods binary frames past the burst gets rate_limited, and 20 refusals close it with 4029", async () => {
    const keys = group();
    const a = await joined(keys);
    const b = await joined(keys);
    const sent = COMMON_LIMITS.rate_burst * 2;
    const stub = env.PASSNOTE_ROOM.get(env.PASSNOTE_ROOM.idFromName(keys.roomId));
    await runInDurableObject(stub, async (room: TestPassnoteRoom, state) => {
      const ws = state.getWebSockets().find((w) => (w.deserializeAttachment() as { peer?: string }).peer === a.peer)!;
      room.frozenAt = Date.now(); // the bucket does not refill meanwhile, however loaded the machine is
      try {
        for (let i = 0; i < sent; i++) await room.webSocketMessage(ws, joinPeerFrame(b.peer, bytes(i & 0xff)).slice().buffer);
      } finally {
        room.frozenAt = undefined;
      }
    });
    expect((await a.s.next("error")).code).toBe("rate_limited");
    expect(await a.s.closed).toBe(CLOSE_CODES.rate_limited);
    await waitFor(() => b.s.binary.length >= COMMON_LIMITS.rate_burst);
    expect(b.s.binary.length).toBeLessThan(sent);
  });

  it("a rate-limited frame is answered with rate_limited and retry_after_ms, never dropped silently: one answer per refused frame", async () => {
    const keys = group();
    const a = await joined(keys);
    const b = await joined(keys);
    // Fewer refusals than rate_limited_before_close, so the socket stays open. The frames are fed
    // to the object in one run, with the rate limits' clock held still.
    const sent = COMMON_LIMITS.rate_burst + COMMON_LIMITS.rate_limited_before_close - 1;
    const stub = env.PASSNOTE_ROOM.get(env.PASSNOTE_ROOM.idFromName(keys.roomId));
    await runInDurableObject(stub, async (room: TestPassnoteRoom, state) => {
      const ws = state.getWebSockets().find((w) => (w.deserializeAttachment() as { peer?: string }).peer === a.peer)!;
      room.frozenAt = Date.now(); // the bucket does not refill meanwhile, however loaded the machine is
      try {
        for (let i = 0; i < sent; i++) await room.webSocketMessage(ws, joinPeerFrame(b.peer, bytes(i & 0xff)).slice().buffer);
      } finally {
        room.frozenAt = undefined;
      }
    });
    const errors = () => a.s.ofType("error") as Array<{ code: string; retry_after_ms?: number }>;
    await waitFor(() => b.s.binary.length + errors().length === sent);
    expect(errors().length).toBeGreaterThan(0);
    for (const e of errors()) {
      expect(e.code).toBe("rate_limited");
      expect(Number.isInteger(e.retry_after_ms) && e.retry_after_ms! > 0).toBe(true);
      expect(e.retry_after_ms).toBeLessThanOrEqual(Math.ceil(1000 / COMMON_LIMITS.rate_messages_per_second));
    }
    expect(a.s.closeCode).toBeUndefined();
  });
});
