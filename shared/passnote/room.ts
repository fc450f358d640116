// Sync rooms (docs/passnote.md): the room id and its join proof, and the 8-byte peer-id prefix of
// every binary message. Used by the room object (verify) and by peers (derive, sign).
import { ed25519 } from "@noble/curves/ed25519.js";
import { hkdf } from "@noble/hashes/hkdf.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { base64urlDecode, base64urlEncode, bytesToHex, concatBytes, hexToBytes, utf8Encode } from "../encoding";

const ROOM_INFO = "passnote-relay-room-v1";
const JOIN_CONTEXT = "passnote-relay-join-v1";
/** Length of the peer id that prefixes every binary message. */
export const PEER_ID_BYTES = 8;
/** The all-zero destination: every other peer in the room. */
export const BROADCAST = "0000000000000000";

export interface RoomKeys {
  /** base64url of the room's Ed25519 public key P (43 characters). */
  roomId: string;
  /** The Ed25519 seed the group's devices share. */
  seed: Uint8Array;
}

/** Room key pair from the roster key (or, without identities, the passphrase key). */
export function roomKeys(rosterKey: Uint8Array): RoomKeys {
  const seed = hkdf(sha256, rosterKey, new Uint8Array(0), utf8Encode(ROOM_INFO), 32);
  return { roomId: base64urlEncode(ed25519.getPublicKey(seed)), seed };
}

/** Whether `s` has the shape of a room id: base64url of 32 bytes. */
export function isRoomId(s: string): boolean {
  if (!/^[A-Za-z0-9_-]{43}$/.test(s)) return false;
  try {
    return base64urlDecode(s).length === 32;
  } catch {
    return false;
  }
}

/** The bytes a join signature covers: UTF-8('passnote-relay-join-v1') ‖ challenge bytes. */
export function joinMessage(challenge: Uint8Array): Uint8Array {
  return concatBytes(utf8Encode(JOIN_CONTEXT), challenge);
}

/** The `sig` of a join message (base64url). */
export function signJoin(keys: RoomKeys, challengeB64url: string): string {
  return base64urlEncode(ed25519.sign(joinMessage(base64urlDecode(challengeB64url)), keys.seed));
}

/** Verifies a join signature under the room's key with WebCrypto Ed25519; false on anything malformed. */
export async function verifyJoin(roomId: string, challengeB64url: string, sigB64url: string): Promise<boolean> {
  try {
    const pub = base64urlDecode(roomId);
    const sig = base64urlDecode(sigB64url);
    if (pub.length !== 32 || sig.length !== 64) return false;
    const key = await crypto.subtle.importKey("raw", buf(pub), { name: "Ed25519" }, false, ["verify"]);
    return await crypto.subtle.verify({ name: "Ed25519" }, key, buf(sig), buf(joinMessage(base64urlDecode(challengeB64url))));
  } catch {
    return false;
  }
}

/** A copy backed by a plain ArrayBuffer, as WebCrypto's types want. */
function buf(b: Uint8Array): Uint8Array<ArrayBuffer> {
  return new Uint8Array(b);
}

/** Splits a binary message into its 8-byte peer id (16 hex) and frame; null when too short. */
export function splitPeerFrame(data: Uint8Array): { peer: string; frame: Uint8Array } | null {
  if (data.length < PEER_ID_BYTES) return null;
  return { peer: bytesToHex(data.subarray(0, PEER_ID_BYTES)), frame: data.subarray(PEER_ID_BYTES) };
}

/** peer id (16 hex) ‖ frame. */
export function joinPeerFrame(peer: string, frame: Uint8Array): Uint8Array {
  const out = new Uint8Array(PEER_ID_BYTES + frame.length);
  out.set(hexToBytes(peer), 0);
  out.set(frame, PEER_ID_BYTES);
  return out;
}

/** Whether a binary message (at least PEER_ID_BYTES long) is addressed to the broadcast id. */
export function isBroadcastFrame(data: Uint8Array): boolean {
  for (let i = 0; i < PEER_ID_BYTES; i++) if (data[i] !== 0) return false;
  return true;
}

/**
 * The relayed form of a binary message, made in place: its peer-id prefix (the destination, as the
 * sender wrote it) overwritten with the sender's id (8 bytes). The same bytes as
 * joinPeerFrame(sender, splitPeerFrame(data).frame), without a copy.
 */
export function restampPeerFrame(data: Uint8Array, sender: Uint8Array): Uint8Array {
  data.set(sender.subarray(0, PEER_ID_BYTES), 0);
  return data;
}
