// docs/passnote.md: room ids from the roster key, the join proof (verified with WebCrypto), and
// the 8-byte peer-id prefix of binary messages.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { ed25519 } from "@noble/curves/ed25519.js";
import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { base64urlEncode, randomBytes, utf8Encode } from "../../../../shared/encoding";
import {
  BROADCAST,
  isBroadcastFrame,
  isRoomId,
  joinPeerFrame,
  restampPeerFrame,
  roomKeys,
  signJoin,
  splitPeerFrame,
  verifyJoin,
} from "../../../../shared/passnote/room";
import { bytesToHex } from "../../../../shared/encoding";

describe("docs/passnote.md: room id and join proof", () => {
  it("room id = base64url(P), P the Ed25519 key of HKDF-SHA256(roster key, salt empty, 'passnote-relay-room-v1', 32)", () => {
    const roster = new Uint8Array(32).fill(7);
    const seed = hkdf(sha256, roster, new Uint8Array(0), utf8Encode("passnote-relay-room-v1"), 32);
    const keys = roomKeys(roster);
    expect(keys.roomId).toBe(base64urlEncode(ed25519.getPublicKey(seed)));
    expect(keys.roomId).toHaveLength(43);
    expect(isRoomId(keys.roomId)).toBe(true);
    expect(isRoomId(keys.roomId.slice(1))).toBe(false);
  });

  it("a signature over 'passnote-relay-join-v1' ‖ challenge verifies under P with WebCrypto; another group's does not", async () => {
    const keys = roomKeys(randomBytes(32));
    const challenge = base64urlEncode(randomBytes(32));
    expect(await verifyJoin(keys.roomId, challenge, signJoin(keys, challenge))).toBe(true);
    expect(await verifyJoin(keys.roomId, challenge, signJoin(roomKeys(randomBytes(32)), challenge))).toBe(false);
    expect(await verifyJoin(keys.roomId, base64urlEncode(randomBytes(32)), signJoin(keys, challenge))).toBe(false);
    expect(await verifyJoin(keys.roomId, challenge, "!!")).toBe(false);
  });

  it("binary messages: 8-byte peer id ‖ frame", () => {
    const m = joinPeerFrame("0102030405060708", Uint8Array.of(9));
    expect(Array.from(m)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(splitPeerFrame(m)).toEqual({ peer: "0102030405060708", frame: Uint8Array.of(9) });
    expect(splitPeerFrame(Uint8Array.of(1, 2))).toBeNull();
  });

  it("the relay's in-place forwarding (restampPeerFrame) gives the same bytes as join(sender, split(message).frame), and a broadcast is exactly the all-zero id", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 8, maxLength: 64 }),
        fc.uint8Array({ minLength: 8, maxLength: 8 }),
        fc.boolean(),
        (message, sender, zero) => {
          if (zero) message.fill(0, 0, 8);
          const split = splitPeerFrame(message)!;
          const expected = joinPeerFrame(bytesToHex(sender), split.frame);
          expect(isBroadcastFrame(message)).toBe(split.peer === BROADCAST);
          expect(restampPeerFrame(message, sender)).toEqual(expected);
        },
      ),
      { seed: 5151, numRuns: 300 },
    );
  });
});
