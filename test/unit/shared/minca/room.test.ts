import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { utf8Decode } from "../../../../shared/encoding";
import { newP256Key } from "../../../../shared/minca/es256";
import { MINCA_ROOM_LIMITS } from "../../../../shared/limits";
import {
  checkJoin,
  deliveredFrame,
  deliveredSchema,
  joinStatement,
  makeJoin,
  newChallenge,
  outgoingSchema,
  roomTimes,
  ROOM_TYPES,
} from "../../../../shared/minca/room";
import { answerBodySchema, askBodySchema, helloSchema, homeBodySchema, keySchema } from "../../../../clients/minca/protocol/messages";

const ROOM = "bihn55ne2az53tlealtmk3ervpyk6xa6364ii25ogc7xv54zkjszq";

describe("the room's join and relay rules (docs/minca-rooms.md)", () => {
  it("a join signs UTF-8('minca/relay-join/v1') ‖ UTF-8(room) ‖ the challenge's 32 bytes", async () => {
    const challenge = newChallenge();
    const bytes = joinStatement(ROOM, challenge);
    expect(utf8Decode(bytes.subarray(0, 19 + ROOM.length))).toBe(`minca/relay-join/v1${ROOM}`);
    expect(bytes.length).toBe(19 + ROOM.length + 32);
    const key = await newP256Key();
    const join = await makeJoin(key, ROOM, challenge);
    expect(await checkJoin(join, ROOM, challenge)).toBe(true);
    expect(await checkJoin(join, ROOM, newChallenge())).toBe(false);
    expect(await checkJoin({ ...join, did: (await newP256Key()).did }, ROOM, challenge)).toBe(false);
  });

  it("a room lives 15 minutes from its first join and refuses joins for 24 hours after", () => {
    expect(roomTimes(1000)).toEqual({ expiresAt: 1000 + 900_000, refusesUntil: 1000 + 900_000 + 86_400_000 });
    expect(MINCA_ROOM_LIMITS).toMatchObject({ max_peers: 8, max_message_bytes: 16_384, max_messages_per_peer: 64 });
  });

  it("the relay's own types cannot be sent as network messages", () => {
    for (const type of ROOM_TYPES) expect(outgoingSchema.safeParse({ type }).success).toBe(false);
    expect(outgoingSchema.safeParse({ type: "code:hello", payload: { commit: "x" } }).success).toBe(true);
    expect(outgoingSchema.safeParse({ type: "code:hello", to: "did:key:zNot" }).success).toBe(false);
  });

  it("the delivered frame carries the payload's own text, and parses as what was sent", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 64 }), fc.option(fc.jsonValue(), { nil: undefined }), (type, payload) => {
        const frame = deliveredFrame(
          type,
          "did:key:zDnaeyrPwbZxpDVLsnvAvAEGYazWB2ZrM7QL4Qb1JPzfiYpKy",
          payload === undefined ? undefined : JSON.stringify(payload),
        );
        const parsed = JSON.parse(frame);
        expect(parsed.type).toBe(type);
        expect(parsed.payload).toEqual(payload === undefined ? undefined : JSON.parse(JSON.stringify(payload)));
      }),
      { numRuns: 200 },
    );
  });

  it("fuzz: every message schema takes any JSON without throwing", () => {
    const schemas = [outgoingSchema, deliveredSchema, helloSchema, keySchema, homeBodySchema, askBodySchema, answerBodySchema];
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), fc.string({ maxLength: 12 }), (v, type) => {
        for (const s of schemas) {
          s.safeParse(v);
          s.safeParse({ type, payload: v, to: v, from: v, commit: v, key: v, grant: v, denied: v });
        }
      }),
      { numRuns: 300 },
    );
  });
});
