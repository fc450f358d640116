// docs/schemas: the JSON Schemas of every WebSocket message are what scripts/schemas.ts
// generates from the zod schemas (regenerate with `npm run schemas`), and real frames from the
// running relay, and the frames clients send it, are valid under them.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import * as z from "zod";
import { schemaFiles, SCHEMA_DIR } from "../../scripts/schemas";
import { codeRoom, codeSecret, newCode } from "../../shared/minca/code";
import { newP256Key } from "../../shared/minca/es256";
import { makeJoin } from "../../shared/minca/room";
import { roomKeys, signJoin } from "../../shared/passnote/room";
import { makeAuthEvent } from "../../shared/tally/auth";
import { groupKey } from "../helpers/passnote";
import { TestSocket } from "../helpers/socket";
import { newUser } from "../helpers/tally";

const ws = inject("relayUrl").replace(/^http/, "ws");
const schema = (name: string) => z.fromJSONSchema(JSON.parse(readFileSync(join(SCHEMA_DIR, name), "utf8")));

/** Every frame must be valid under the file's schema; the failures name the frame. */
function expectValid(name: string, frames: unknown[]): void {
  const s = schema(name);
  const bad = frames.filter((f) => !s.safeParse(f).success);
  expect(bad, `${name}: frames not valid under it`).toEqual([]);
}

describe("docs/schemas", () => {
  it("are current: each file is what `npm run schemas` generates from the zod schemas", () => {
    for (const [name, text] of Object.entries(schemaFiles())) expect(readFileSync(join(SCHEMA_DIR, name), "utf8"), name).toBe(text);
  });

  it("Tally: a registration, the flush, a pong and an error, both ways, are valid", async () => {
    const user = newUser();
    const s = await TestSocket.open(`${ws}/tally/v1/${user.npub}`);
    const { challenge } = await s.next("challenge");
    const register = {
      type: "register",
      user_id: user.npub,
      auth: makeAuthEvent({ secretKey: user.secretKey, challenge, relayUrl: ws }),
      acks: true,
    };
    s.send(register);
    await s.next("registered");
    await s.next("queue_drained");
    s.send({ type: "ping" });
    await s.next("pong");
    s.send({ type: "ack", id: "x", from_user_id: "not-an-npub" });
    await s.next("error");
    expectValid("tally.relay-to-client.json", s.messages);
    expectValid("tally.client-to-relay.json", [register, { type: "ping" }, { type: "connect_peer", peer_user_id: user.npub }]);
    s.ws.close();
  });

  it("Passnote: challenge, welcome, join and leave of another device, both ways, are valid", async () => {
    const keys = roomKeys(groupKey());
    const open = async () => {
      const s = await TestSocket.open(`${ws}/passnote/v2/${keys.roomId}`);
      const { challenge } = await s.next("challenge");
      const join = { type: "join", sig: signJoin(keys, challenge) };
      s.send(join);
      await s.next("welcome");
      return { s, join };
    };
    const a = await open();
    const b = await open();
    await a.s.next("join");
    b.s.ws.close();
    await a.s.next("leave");
    expectValid("passnote.relay-to-client.json", [...a.s.messages, ...b.s.messages]);
    expectValid("passnote.client-to-relay.json", [a.join, b.join]);
    a.s.ws.close();
  });

  it("Minca rooms: challenge, welcome, peer, a delivered message and gone, both ways, are valid", async () => {
    const room = codeRoom(codeSecret(newCode()));
    const open = async () => {
      const s = await TestSocket.open(`${ws}/minca/v1/rooms/${room}`);
      const { challenge } = await s.next("challenge");
      const join = await makeJoin(await newP256Key(), room, challenge);
      s.send(join);
      await s.next("welcome");
      return { s, join };
    };
    const a = await open();
    const b = await open();
    await a.s.next("peer");
    const sent = { type: "app:hello", payload: { n: 1 } };
    b.s.send(sent);
    await a.s.next("app:hello");
    b.s.ws.close();
    await a.s.next("gone");
    expectValid("minca-rooms.relay-to-client.json", [...a.s.messages, ...b.s.messages]);
    expectValid("minca-rooms.client-to-relay.json", [a.join, b.join, sent]);
    a.s.ws.close();
  });
});
