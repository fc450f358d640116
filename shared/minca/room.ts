// The relay's code-channel room (docs/minca-rooms.md): who may join and what a peer may send. The
// Durable Object holds sockets and state; every decision about bytes is made here.
import * as z from "zod";
import { base64urlDecode, base64urlEncode, concatBytes, randomBytes, utf8Encode } from "../encoding";
import { MINCA_ROOM_LIMITS } from "../limits";
import { DID_KEY_MAX_CHARS, isP256DidKey } from "./did-key";
import { es256SignB64, es256Verify, type P256Key } from "./es256";
import { errorFrameSchema } from "../errors";
import { pingSchema, pongSchema } from "../keepalive";

export { isRoomId, ROOM_ID_PATTERN } from "./code";

const JOIN_LABEL = "minca/relay-join/v1";
export const CHALLENGE_BYTES = 32;

/** The types the relay itself speaks on a room; a peer may not send them as network messages. */
export const ROOM_TYPES = ["challenge", "join", "welcome", "peer", "gone", "error", "ping", "pong"] as const;
const reserved = new Set<string>(ROOM_TYPES);

export function newChallenge(): string {
  return base64urlEncode(randomBytes(CHALLENGE_BYTES));
}

/** The bytes a joining key signs: UTF-8("minca/relay-join/v1") ‖ UTF-8(room) ‖ challenge bytes. */
export function joinStatement(room: string, challenge: string): Uint8Array {
  return concatBytes(utf8Encode(JOIN_LABEL), utf8Encode(room), base64urlDecode(challenge));
}

const didSchema = z.string().max(DID_KEY_MAX_CHARS).refine(isP256DidKey, "not a P-256 did:key");

export const challengeSchema = z.object({ type: z.literal("challenge"), challenge: z.string() });
export const joinSchema = z.object({
  type: z.literal("join"),
  did: z.string().max(DID_KEY_MAX_CHARS),
  sig: z.string().max(128),
});
export const welcomeSchema = z.object({ type: z.literal("welcome"), peers: z.array(z.string()) });
export const peerSchema = z.object({ type: z.literal("peer"), did: z.string() });
export const goneSchema = z.object({ type: z.literal("gone"), did: z.string() });

/** A network message as a peer sends it: any type of the peer's own, an optional target, an opaque payload. */
export const outgoingSchema = z.object({
  type: z
    .string()
    .min(1)
    .max(MINCA_ROOM_LIMITS.max_type_chars)
    .refine((t) => !reserved.has(t), "this type is the relay's own"),
  to: didSchema.optional(),
  payload: z.unknown().optional(),
});
export type Outgoing = z.infer<typeof outgoingSchema>;

/** A network message as the relay delivers it; `from` is the sender's proven did. */
export const deliveredSchema = z.object({
  type: z.string().min(1).max(MINCA_ROOM_LIMITS.max_type_chars),
  from: didSchema,
  payload: z.unknown().optional(),
});
export type Delivered = z.infer<typeof deliveredSchema>;

/**
 * Every message a client sends the relay: the join and the ping, routed by their `type`, and
 * network messages (any other type: `outgoingSchema`), which the room relays. Not a discriminated
 * union: a network message's `type` is the peers' own.
 */
export const clientMessageSchema = z.union([joinSchema, pingSchema, outgoingSchema]);
export type ClientMessage = z.infer<typeof clientMessageSchema>;

/** Every message the relay sends a client: its own, the error frame, and the network messages it delivers. */
export const relayMessageSchema = z.union([
  challengeSchema,
  welcomeSchema,
  peerSchema,
  goneSchema,
  errorFrameSchema,
  pongSchema,
  deliveredSchema,
]);
export type RelayMessage = z.infer<typeof relayMessageSchema>;

/** Signs a join for a room's challenge with a throwaway key. */
export async function makeJoin(key: P256Key, room: string, challenge: string) {
  return { type: "join" as const, did: key.did, sig: await es256SignB64(key, joinStatement(room, challenge)) };
}

/** Whether a join proves its did for this room and challenge. */
export async function checkJoin(join: { did: string; sig: string }, room: string, challenge: string): Promise<boolean> {
  if (!isP256DidKey(join.did)) return false;
  return es256Verify(join.did, join.sig, joinStatement(room, challenge));
}

/** The frame the relay delivers: type and from first, the payload's own text as it arrived. */
export function deliveredFrame(type: string, from: string, rawPayload: string | undefined): string {
  const head = `{"type":${JSON.stringify(type)},"from":${JSON.stringify(from)}`;
  return rawPayload === undefined ? `${head}}` : `${head},"payload":${rawPayload}}`;
}

/** When a room that was first joined at `firstJoinAt` closes, and until when it refuses joins. */
export function roomTimes(firstJoinAt: number): { expiresAt: number; refusesUntil: number } {
  const expiresAt = firstJoinAt + MINCA_ROOM_LIMITS.room_lifetime_seconds * 1000;
  return { expiresAt, refusesUntil: expiresAt + MINCA_ROOM_LIMITS.tombstone_seconds * 1000 };
}
