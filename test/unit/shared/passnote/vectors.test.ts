// Fixed vectors (hex in, hex out) for every derivation of the Passnote protocol and of the sync rooms: the fingerprint, the ratchet-hello signed bytes, the session root, the low and high chains,
// ratcheted frame 0, the key tag, the roster signature, the room id and the join message. The
// values were computed once from this code after each derivation was read against the Passnote protocol (labels,
// byte order) and recomputed independently with node:crypto; they are pinned here, so any change
// in the code's bytes fails (Ed25519 signatures are deterministic, so they are pinned too).
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { ed25519, x25519 } from "@noble/curves/ed25519.js";
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { describe, expect, it } from "vitest";
import v from "../../../fixtures/passnote.vectors.json";
import { base64urlDecode, base64urlEncode, bytesToHex, hexToBytes, utf8DecodeExact } from "../../../../shared/encoding";
import { MemoryStore, recordFingerprint } from "../../../../clients/passnote/protocol/records";
import { deviceIdOf, devicePublicKey, keyTagOf, signRosterRecord, verifyRosterRecord } from "../../../../clients/passnote/protocol/roster";
import { joinMessage, roomKeys, signJoin, verifyJoin } from "../../../../shared/passnote/room";
import {
  Session,
  chainKeys,
  helloSignedBytes,
  openSession,
  sessionRoot,
  signRatchetHello,
} from "../../../../clients/passnote/protocol/session";
import { decodeMessage, encodeMessage } from "../../../../clients/passnote/protocol/wire";

const h = hexToBytes;
const hex = bytesToHex;

describe("fixed vectors: the Passnote protocol", () => {
  it("vector: the fingerprint of a record is SHA-256(key ‖ 0x00 ‖ hlc)[0..16], a range's their XOR", () => {
    const store = new MemoryStore();
    for (const r of v.fingerprint.records) {
      const key = utf8DecodeExact(h(r.keyUtf8));
      expect(hex(recordFingerprint(key, r.hlc))).toBe(r.fingerprint);
      store.merge("c", { key, value: null, is_deleted: false, hlc: r.hlc });
    }
    expect(hex(store.summary("c").fingerprint)).toBe(v.fingerprint.xor);
  });

  it("vector: the key tag is HKDF-SHA256(groupKey, empty salt, 'passnote-key-tag-v2', 8 bytes)", () => {
    expect(hex(keyTagOf(h(v.keyTag.groupKey)))).toBe(v.keyTag.keyTag);
  });

  it("vector: the ratchet-hello signed bytes, its signature and its frame", () => {
    const r = v.ratchetHello;
    const pub = devicePublicKey(h(r.deviceKey));
    expect(hex(pub)).toBe(r.devicePub);
    expect(deviceIdOf(pub)).toBe(r.deviceId);
    const fields = { from: r.from, to: r.to, device: r.deviceId, keyTag: h(r.keyTag), ephemeral: h(r.ephemeral) };
    expect(hex(helloSignedBytes(fields))).toBe(r.signedBytes);
    const hello = signRatchetHello(h(r.deviceKey), fields);
    expect(hex(hello.signature)).toBe(r.signature);
    expect(hex(encodeMessage(hello))).toBe(r.frame);
    expect(decodeMessage(h(r.frame))).toEqual(hello);
  });

  it("vector: the session root, the low and high chains, and ratcheted frame 0", () => {
    const s = v.session;
    expect(hex(x25519.getPublicKey(h(s.ephemeralSecretA)))).toBe(s.ephemeralA);
    expect(hex(x25519.getPublicKey(h(s.ephemeralSecretB)))).toBe(s.ephemeralB);
    const shared = x25519.getSharedSecret(h(s.ephemeralSecretA), h(s.ephemeralB));
    expect(hex(shared)).toBe(s.shared);
    // Either side's view (ids and keys in either order) gives the same root.
    expect(hex(sessionRoot(h(s.groupKey), shared, [s.idA, s.idB], [h(s.ephemeralA), h(s.ephemeralB)]))).toBe(s.root);
    expect(hex(sessionRoot(h(s.groupKey), shared, [s.idB, s.idA], [h(s.ephemeralB), h(s.ephemeralA)]))).toBe(s.root);
    const { low, high } = chainKeys(h(s.root));
    expect(hex(low)).toBe(s.chainLow);
    expect(hex(high)).toBe(s.chainHigh);
    // Frame 0 from the lower id (the low chain), sealed by the session from both ephemeral secrets.
    const f = s.frame0;
    const a = openSession({
      groupKey: h(s.groupKey),
      mine: { pub: h(s.ephemeralA), secret: h(s.ephemeralSecretA) },
      theirs: h(s.ephemeralB),
      selfId: s.idA,
      peerId: s.idB,
    })!;
    expect(hex(a.seal(h(f.plaintext)))).toBe(f.sealed);
    // The layout without the Session class: 0x01 ‖ counter (8 bytes BE) ‖ XChaCha20-Poly1305(mk0,
    // 24 zero bytes, frame, aad = 0x01 ‖ counter), mk0 = HMAC(chain_low, 0x01).
    const sealed = h(f.sealed);
    expect(hex(sealed.subarray(0, 9))).toBe("010000000000000000");
    expect(hex(xchacha20poly1305(h(f.messageKey), new Uint8Array(24), sealed.subarray(0, 9)).decrypt(sealed.subarray(9)))).toBe(
      f.plaintext,
    );
    const b = new Session(h(s.root), s.idB, s.idA);
    expect(b.open(sealed)).toEqual({ status: "ok", frame: h(f.plaintext) });
    // The chain then moves on: chain = HMAC(chain_low, 0x02), and frame 1 is sealed under its key.
    expect(hex(hmac(sha256, low, Uint8Array.of(2)))).toBe(f.nextChain);
    const next = a.seal(h(f.plaintext));
    expect(hex(next.subarray(0, 9))).toBe("010000000000000001");
    const mk1 = hmac(sha256, h(f.nextChain), Uint8Array.of(1));
    expect(hex(xchacha20poly1305(mk1, new Uint8Array(24), next.subarray(0, 9)).decrypt(next.subarray(9)))).toBe(f.plaintext);
    expect(b.open(next)).toEqual({ status: "ok", frame: h(f.plaintext) });
  });

  it("vector: the roster record's signed bytes and the owner's signature over them", () => {
    const r = v.roster;
    expect(hex(devicePublicKey(h(r.ownerKey)))).toBe(r.owner);
    for (const want of r.records) {
      const rec = signRosterRecord(h(r.ownerKey), h(r.memberPub), want.revoked, want.hlc);
      expect(rec.key).toBe(r.deviceId);
      expect(hex(base64urlDecode((rec.value as { sig: string }).sig))).toBe(want.signature);
      // The pinned bytes are what the signature covers.
      expect(ed25519.verify(h(want.signature), h(want.signedBytes), h(r.owner))).toBe(true);
      expect(verifyRosterRecord(h(r.owner), rec)).toEqual({ device: r.deviceId, pub: h(r.memberPub), revoked: want.revoked });
    }
  });
});

describe("fixed vectors: sync rooms (docs/passnote.md)", () => {
  it("vector: the room id is base64url of the Ed25519 key from HKDF-SHA256(roster key, 'passnote-relay-room-v1')", () => {
    const keys = roomKeys(h(v.room.rosterKey));
    expect(hex(keys.seed)).toBe(v.room.seed);
    expect(keys.roomId).toBe(v.room.roomId);
    expect(hex(base64urlDecode(keys.roomId))).toBe(v.room.publicKey);
  });

  it("vector: the join message is UTF-8('passnote-relay-join-v1') ‖ challenge, signed under the room key", async () => {
    const challenge = h(v.join.challenge);
    expect(hex(joinMessage(challenge))).toBe(v.join.message);
    const keys = roomKeys(h(v.join.rosterKey));
    const sig = signJoin(keys, base64urlEncode(challenge));
    expect(hex(base64urlDecode(sig))).toBe(v.join.signature);
    expect(await verifyJoin(keys.roomId, base64urlEncode(challenge), sig)).toBe(true);
  });
});
