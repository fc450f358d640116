// docs/hostile.md, "Nothing is stored for free": a request or socket that keeps nothing leaves
// no storage behind on any object: no table, no row, no alarm. (workerd keeps an empty SQLite
// file per started object; that is the runtime's.) The schema is made on the first write that
// keeps something, with its migrations recorded.
import { SELF, env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { makeAuthEvent } from "../../shared/tally/auth";
import { roomKeys, signJoin } from "../../shared/passnote/room";
import { codeRoom, codeSecret, newCode } from "../../shared/minca/code";
import { newP256Key } from "../../shared/minca/es256";
import { makeJoin } from "../../shared/minca/room";
import { bytesToHex, randomBytes } from "../../shared/encoding";
import { newUser, opaqueEnvelope } from "../helpers/tally";
import { TestSocket } from "../helpers/socket";
import { deliver } from "../helpers/tally-user";
import type { TestTallyUser } from "./test-objects";
import { MIGRATIONS } from "../../migrations/index";

const BASE = "http://relay.test";

/** What an object holds: its tables and its alarm. */
async function held(stub: { id: DurableObjectId }): Promise<{ tables: string[]; alarm: number | null }> {
  return runInDurableObject(stub as DurableObjectStub, async (_o: unknown, state: DurableObjectState) => ({
    tables: state.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' ORDER BY name")
      .toArray()
      .map((r) => r.name),
    alarm: await state.storage.getAlarm(),
  }));
}

const NOTHING = { tables: [], alarm: null };

async function upgrade(path: string): Promise<TestSocket> {
  const res = await SELF.fetch(`${BASE}${path}`, { headers: { upgrade: "websocket" } });
  expect(res.status).toBe(101);
  const ws = res.webSocket!;
  ws.accept();
  return new TestSocket(ws as unknown as WebSocket);
}

const topic = () => bytesToHex(randomBytes(16));
const spaceId = () => codeRoom(codeSecret(newCode()));

describe("docs/hostile.md: nothing is stored for free", () => {
  it("a Tally upgrade that never registers leaves no storage on the user's object, before and after the auth timeout closes it", async () => {
    const bob = newUser();
    const stub = env.TALLY_USER.get(env.TALLY_USER.idFromName(bob.hex));
    const s = await upgrade(`/tally/v1/${bob.npub}`);
    await s.next("challenge");
    expect(await held(stub)).toEqual(NOTHING);
    await runInDurableObject(stub, (o: TestTallyUser) => o.closeUnauthenticated(Date.now() + 11_000));
    expect(await s.closed).toBe(4001);
    await evictDurableObject(stub);
    expect(await held(stub)).toEqual(NOTHING);
  });

  it("a registered Tally device with nothing queued stores nothing; the first stored envelope makes the schema, with its migrations recorded", async () => {
    const alice = newUser();
    const bob = newUser();
    const stub = env.TALLY_USER.get(env.TALLY_USER.idFromName(bob.hex));
    const s = await upgrade(`/tally/v1/${bob.npub}`);
    const { challenge } = await s.next("challenge");
    s.send({
      type: "register",
      user_id: bob.npub,
      auth: makeAuthEvent({ secretKey: bob.secretKey, challenge, relayUrl: "ws://relay.test" }),
    });
    await s.next("queue_drained");
    s.close();
    await s.closed;
    // no table, and no alarm: the idle bound runs on no timer (docs/tally.md, "Idle sockets")
    expect((await held(stub)).tables).toEqual([]);
    expect(await deliver(stub, JSON.stringify(opaqueEnvelope(alice, bob, "kept")), alice.hex, "kept")).toBe("stored");
    await evictDurableObject(stub);
    const after = await runInDurableObject(stub, (_o, state) => ({
      migrations: state.storage.sql
        .exec<{ name: string }>("SELECT name FROM _migrations")
        .toArray()
        .map((r) => r.name),
      user: state.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'user_hex'").one().value,
    }));
    // the class's last migration recorded alone: every one before it is applied with it
    expect(after).toEqual({ migrations: [MIGRATIONS.TallyUser[MIGRATIONS.TallyUser.length - 1].name], user: bob.hex });
  });

  it("a Passnote room stores nothing, for sockets that never join and for peers that do", async () => {
    const keys = roomKeys(randomBytes(32));
    const stub = env.PASSNOTE_ROOM.get(env.PASSNOTE_ROOM.idFromName(keys.roomId));
    const parked = await upgrade(`/passnote/v2/${keys.roomId}`);
    await parked.next("challenge");
    const peer = await upgrade(`/passnote/v2/${keys.roomId}`);
    const { challenge } = await peer.next("challenge");
    peer.send({ type: "join", sig: signJoin(keys, challenge) });
    await peer.next("welcome");
    expect(await held(stub)).toEqual(NOTHING);
  });

  it("a Minca code room that nobody joins stores nothing", async () => {
    const room = spaceId();
    const stub = env.MINCA_ROOM.get(env.MINCA_ROOM.idFromName(room));
    const s = await upgrade(`/minca/v1/rooms/${room}`);
    await s.next("challenge");
    s.close();
    await s.closed;
    expect(await held(stub)).toEqual(NOTHING);
    // the first join is the room's first write: its row and its alarm
    const j = await upgrade(`/minca/v1/rooms/${room}`);
    const { challenge } = await j.next("challenge");
    j.send(await makeJoin(await newP256Key(), room, challenge));
    await j.next("welcome");
    const after = await held(stub);
    expect(after.tables).toContain("room");
    expect(after.alarm).not.toBeNull();
  });

  it("GETs of an unknown mailbox topic (page, long-poll, item) and a DELETE of a receiver store nothing", async () => {
    const t = topic();
    const stub = env.MINCA_MAILBOX.get(env.MINCA_MAILBOX.idFromName(t));
    expect((await SELF.fetch(`${BASE}/minca/v1/mailbox/${t}`)).status).toBe(200);
    expect((await SELF.fetch(`${BASE}/minca/v1/mailbox/${t}?after=5&wait=0`)).status).toBe(200);
    expect((await SELF.fetch(`${BASE}/minca/v1/mailbox/${t}/items/1`)).status).toBe(404);
    expect((await SELF.fetch(`${BASE}/minca/v1/mailbox/${t}/receivers/0123456789abcdef`, { method: "DELETE" })).status).toBe(404);
    expect(await held(stub)).toEqual(NOTHING);
  });

  it("a GET of an unknown hosted account and GETs and POSTs of an unknown space store nothing", async () => {
    const did = (await newP256Key()).did;
    const account = env.MINCA_ACCOUNT.get(env.MINCA_ACCOUNT.idFromName(did));
    expect((await SELF.fetch(`${BASE}/minca/v1/host/accounts/${did}`)).status).toBe(401);
    expect(await held(account)).toEqual(NOTHING);
    const id = spaceId();
    const space = env.MINCA_SPACE.get(env.MINCA_SPACE.idFromName(id));
    expect((await SELF.fetch(`${BASE}/minca/v1/spaces/${id}/versions`)).status).toBe(404);
    const post = await SELF.fetch(`${BASE}/minca/v1/spaces/${id}/versions`, { method: "POST", body: "[]" });
    expect(post.status).toBeGreaterThanOrEqual(400);
    expect(await held(space)).toEqual(NOTHING);
  });
});
