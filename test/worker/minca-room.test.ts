// The code-channel room inside workerd: the Worker's route, the Durable Object's join, relay and
// bounds, eviction between messages, and the alarm that ends the room and then forgets it.
import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { runDeferred } from "../helpers/deferred";
import { describe, expect, it } from "vitest";
import { waitFor } from "../helpers/wait";
import { p256 } from "@noble/curves/nist.js";
import { base64urlEncode } from "../../shared/encoding";
import { codeRoom, codeSecret, newCode } from "../../shared/minca/code";
import { newP256Key, type P256Key } from "../../shared/minca/es256";
import { joinStatement, makeJoin } from "../../shared/minca/room";
import { es256Sign } from "../../shared/minca/es256";
import { COMMON_LIMITS, MINCA_ROOM_LIMITS } from "../../shared/limits";
import { TestSocket } from "../helpers/socket";
import { generateSecretKey, getPublicKeyHex, npubEncode } from "../../shared/tally/keys";

const BASE = "http://relay.test/minca/v1/rooms";
const newRoom = () => codeRoom(codeSecret(newCode()));
const stubOf = (room: string) => env.MINCA_ROOM.get(env.MINCA_ROOM.idFromName(room));

async function connect(room: string): Promise<TestSocket> {
  const res = await SELF.fetch(`${BASE}/${room}`, { headers: { Upgrade: "websocket" } });
  expect(res.status).toBe(101);
  const ws = res.webSocket!;
  ws.accept();
  return new TestSocket(ws as unknown as WebSocket);
}

async function joined(room: string, key?: P256Key): Promise<{ s: TestSocket; did: string; welcome: any }> {
  const k = key ?? (await newP256Key());
  const s = await connect(room);
  const { challenge } = await s.next("challenge");
  s.send(await makeJoin(k, room, challenge));
  const welcome = await s.next("welcome");
  return { s, did: k.did, welcome };
}

/** Moves the room's clock: its life (and tombstone) end `ms` from now instead. */
async function endsIn(room: string, column: "expires_at" | "refuses_until", ms = -1) {
  await runInDurableObject(stubOf(room), (_o, state) => {
    state.storage.sql.exec(`UPDATE room SET ${column} = ?`, Date.now() + ms);
  });
}

describe("GET /minca/v1/rooms/<room>", () => {
  it("a bad room id gets 400 before any upgrade; no upgrade 426; other methods 405", async () => {
    for (const bad of ["b" + "a".repeat(51), "B" + "a".repeat(52), "b" + "a".repeat(51) + "1", "x"]) {
      const res = await SELF.fetch(`${BASE}/${bad}`, { headers: { Upgrade: "websocket" } });
      expect(res.status).toBe(400);
      expect(((await res.json()) as any).error.code).toBe("bad_request");
    }
    expect((await SELF.fetch(`${BASE}/${newRoom()}`)).status).toBe(426);
    expect((await SELF.fetch(`${BASE}/${newRoom()}`, { method: "POST" })).status).toBe(405);
  });

  it("the information document lists the room endpoint and its bounds", async () => {
    const info = (await (await SELF.fetch("http://relay.test/", { headers: { accept: "application/json" } })).json()) as any;
    expect(info.protocols.minca.rooms.endpoint).toBe("/minca/v1/rooms/<room>");
    expect(info.limits.minca_rooms).toEqual(MINCA_ROOM_LIMITS);
  });
});

describe("the code-channel room Durable Object (docs/minca-rooms.md)", () => {
  it("a join that does not prove its did for this room and challenge closes 4001", async () => {
    const room = newRoom();
    const s = await connect(room);
    const { challenge } = await s.next("challenge");
    const key = await newP256Key();
    s.send(await makeJoin(key, newRoom(), challenge)); // signed for another room
    expect((await s.next("error")).code).toBe("auth_failed");
    expect(await s.closed).toBe(4001);
  });

  it("a high-S ES256 join is accepted, as WebCrypto's verifiers must", async () => {
    const room = newRoom();
    const s = await connect(room);
    const { challenge } = await s.next("challenge");
    const key = await newP256Key();
    const sig = await es256Sign(key, joinStatement(room, challenge));
    const n = p256.Point.Fn.ORDER;
    const sBig = BigInt("0x" + [...sig.subarray(32)].map((b) => b.toString(16).padStart(2, "0")).join(""));
    const flipped = new Uint8Array(64);
    flipped.set(sig.subarray(0, 32));
    flipped.set(
      Uint8Array.from(
        (n - sBig)
          .toString(16)
          .padStart(64, "0")
          .match(/../g)!
          .map((h) => parseInt(h, 16)),
      ),
      32,
    );
    s.send({ type: "join", did: key.did, sig: base64urlEncode(flipped) });
    expect((await s.next("welcome")).peers).toEqual([]);
    s.close();
  });

  it("welcome names the peers present; peer and gone tell the others; `from` is set by the relay and the payload passes untouched", async () => {
    const room = newRoom();
    const a = await joined(room);
    const b = await joined(room);
    expect(b.welcome.peers).toEqual([a.did]);
    expect((await a.s.next("peer")).did).toBe(b.did);
    const raw: string[] = [];
    (b.s.ws as any).addEventListener("message", (ev: MessageEvent) => void raw.push(ev.data as string));
    a.s.send(
      `{"type":"code:hello","to":${JSON.stringify(b.did)},"from":"did:key:zDnaeyrPwbZxpDVLsnvAvAEGYazWB2ZrM7QL4Qb1JPzfiYpKy","payload":{"n":1.50,"s":"\\u00e9"}}`,
    );
    const got = await b.s.next("code:hello");
    expect(got.from).toBe(a.did);
    expect(raw).toContain(`{"type":"code:hello","from":${JSON.stringify(a.did)},"payload":{"n":1.50,"s":"\\u00e9"}}`);
    a.s.send({ type: "peer", payload: {} });
    expect((await a.s.next("error")).code).toBe("invalid_message");
    a.s.send({ type: "x", to: (await newP256Key()).did });
    expect((await a.s.next("error")).code).toBe("peer_unavailable");
    b.s.close();
    expect((await a.s.next("gone")).did).toBe(b.did);
    a.s.close();
  });

  it("before joining, a network message is answered auth_failed", async () => {
    const s = await connect(newRoom());
    await s.next("challenge");
    s.send({ type: "code:hello", payload: {} });
    expect((await s.next("error")).code).toBe("auth_failed");
    s.close();
  });

  it("bounds: 8 peers, 16 sockets, 16 KiB per message (close 1009), 64 messages per peer", async () => {
    const room = newRoom();
    const peers = [];
    for (let i = 0; i < MINCA_ROOM_LIMITS.max_peers; i++) peers.push(await joined(room));
    const ninth = await connect(room);
    const { challenge } = await ninth.next("challenge");
    ninth.send(await makeJoin(await newP256Key(), room, challenge));
    expect((await ninth.next("error")).code).toBe("room_full");
    expect(await ninth.closed).toBe(1008);

    const waiting = [];
    for (let i = peers.length; i < MINCA_ROOM_LIMITS.max_sockets; i++) waiting.push(await connect(room));
    const extra = await connect(room);
    expect((await extra.next("error")).code).toBe("room_full");
    expect(await extra.closed).toBe(1008);
    for (const w of waiting) w.close();

    const [a, b] = peers;
    for (let i = 0; i < MINCA_ROOM_LIMITS.max_messages_per_peer; i++) a.s.send({ type: "m", to: b.did, payload: i });
    a.s.send({ type: "m", to: b.did, payload: "one too many" });
    expect((await a.s.next("error")).code).toBe("too_many_messages");
    expect(b.s.ofType("m").length).toBe(MINCA_ROOM_LIMITS.max_messages_per_peer);

    b.s.send({ type: "m", payload: "x".repeat(MINCA_ROOM_LIMITS.max_message_bytes) });
    expect(await b.s.closed).toBe(1009);
    for (const p of peers) p.s.close();
  });

  it("concurrent joins: one did is admitted once, and never more than 8 peers (checked and admitted with no await between)", async () => {
    const room = newRoom();
    const key = await newP256Key();
    const twins = await Promise.all([connect(room), connect(room), connect(room)]);
    const twinJoins = await Promise.all(twins.map(async (s) => makeJoin(key, room, (await s.next("challenge")).challenge)));
    twinJoins.forEach((j, i) => {
      twins[i].send(j);
    });
    const outcomes = await Promise.all(
      twins.map((s) => Promise.race([s.next("welcome").then(() => "welcome"), s.closed.then(() => "closed")])),
    );
    expect(outcomes.filter((o) => o === "welcome")).toHaveLength(1);
    // as many at once as the room keeps unauthenticated (more would be refused 429 within their grace, see parked-grace.test.ts)
    const crowd = await Promise.all(Array.from({ length: COMMON_LIMITS.max_unauthenticated_sockets_per_object }, () => connect(room)));
    const keys = await Promise.all(crowd.map(() => newP256Key()));
    const joins = await Promise.all(crowd.map(async (s, i) => makeJoin(keys[i], room, (await s.next("challenge")).challenge)));
    joins.forEach((j, i) => {
      crowd[i].send(j);
    });
    const results = await Promise.all(
      crowd.map((s) => Promise.race([s.next("welcome").then(() => "welcome"), s.closed.then(() => "closed")])),
    );
    expect(results.filter((o) => o === "welcome")).toHaveLength(MINCA_ROOM_LIMITS.max_peers - 1);
  });

  it("an object evicted between two messages loses nothing: peers, their dids and their counts", async () => {
    const room = newRoom();
    const a = await joined(room);
    const b = await joined(room);
    a.s.send({ type: "m", to: b.did, payload: 1 });
    await b.s.next("m");
    await evictDurableObject(stubOf(room));
    a.s.send({ type: "m", to: b.did, payload: 2 });
    expect(await b.s.next("m")).toEqual({ type: "m", from: a.did, payload: 2 });
    const c = await joined(room);
    expect(c.welcome.peers.sort()).toEqual([a.did, b.did].sort());
    for (const p of [a, b, c]) p.s.close();
  });

  it("15 minutes from the first join every socket closes 4008, joins are refused for 24 hours, then the room keeps nothing", async () => {
    const room = newRoom();
    const stub = stubOf(room);
    const before = Date.now();
    const a = await joined(room);
    const times = await runInDurableObject(stub, (_o, state) =>
      state.storage.sql.exec<{ first_join_at: number; expires_at: number; refuses_until: number }>("SELECT * FROM room").one(),
    );
    expect(times.first_join_at).toBeGreaterThanOrEqual(before);
    expect(times.expires_at - times.first_join_at).toBe(MINCA_ROOM_LIMITS.room_lifetime_seconds * 1000);
    expect(times.refuses_until - times.expires_at).toBe(MINCA_ROOM_LIMITS.tombstone_seconds * 1000);
    expect(await runInDurableObject(stub, (_o, state) => state.storage.getAlarm())).not.toBeNull();

    await endsIn(room, "expires_at");
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await a.s.next("error")).code).toBe("room_expired");
    expect(await a.s.closed).toBe(4008);
    await runDeferred(stub); // the closes' report; the tombstone's alarm stays
    expect(await runInDurableObject(stub, (_o, state) => state.storage.getAlarm())).toBe(times.refuses_until);

    const late = await connect(room);
    expect((await late.next("error")).code).toBe("room_expired");
    expect(await late.closed).toBe(4008);

    await endsIn(room, "refuses_until");
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const left = await runInDurableObject(stub, async (_o, state) => ({
      tables: state.storage.sql.exec("SELECT name FROM sqlite_master").toArray().length,
      alarm: await state.storage.getAlarm(),
    }));
    expect(left).toEqual({ tables: 0, alarm: null });

    // The id can be used again: a fresh room.
    const again = await joined(room);
    expect(again.welcome.peers).toEqual([]);
    again.s.close();
  });

  it("a room nobody joined keeps nothing once its last socket is gone", async () => {
    const room = newRoom();
    const s = await connect(room);
    await s.next("challenge");
    s.close();
    await s.closed;
    const stub = stubOf(room);
    await waitFor(() => runInDurableObject(stub, (_o, state) => state.getWebSockets().length === 0 || undefined), {
      what: "the close handled",
    });
    const tables = await runInDurableObject(stub, (_o, state) => state.storage.sql.exec("SELECT name FROM sqlite_master").toArray().length);
    expect(tables).toBe(0);
  });
});

describe("the Durable Object base's hook for unrouted types", () => {
  it("objects without one still answer unknown_type (Tally), and keep the socket open", async () => {
    const npub = npubEncode(getPublicKeyHex(generateSecretKey()));
    const res = await SELF.fetch(`http://relay.test/tally/v1/${npub}`, { headers: { Upgrade: "websocket" } });
    const ws = res.webSocket!;
    ws.accept();
    const s = new TestSocket(ws as unknown as WebSocket);
    await s.next("challenge");
    s.send({ type: "code:hello", id: "m1" });
    expect(await s.next("error")).toMatchObject({ code: "unknown_type", id: "m1" });
    s.send({ type: "ping" });
    await s.next("pong");
    s.close();
  });
});
