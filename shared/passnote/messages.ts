// The JSON messages of a sync room (docs/passnote.md), both directions. Binary messages carry the
// protocol itself: see room.ts for their 8-byte prefix and codec.ts for the frames.
import * as z from "zod";
import { errorFrameSchema } from "../errors";
import { pingSchema, pongSchema } from "../keepalive";

const b64url = (bytes: number) =>
  z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/)
    .length(Math.ceil((bytes * 4) / 3), `base64url of ${bytes} bytes`);
const peerId = z.string().regex(/^[0-9a-f]{16}$/, "16 lowercase hex");

/** Client to relay. */
export const joinSchema = z.object({ type: z.literal("join"), sig: b64url(64) });
export type Join = z.infer<typeof joinSchema>;

/** Every JSON message a client sends the relay, by `type` (the relay routes each to one handler). */
export const clientMessageSchema = z.discriminatedUnion("type", [joinSchema, pingSchema]);
export type ClientMessage = z.infer<typeof clientMessageSchema>;

/** Relay to client. */
export const challengeSchema = z.object({ type: z.literal("challenge"), challenge: b64url(32) });
export const welcomeSchema = z.object({ type: z.literal("welcome"), peer: peerId, peers: z.array(peerId) });
export const peerJoinedSchema = z.object({ type: z.literal("join"), peer: peerId });
export const peerLeftSchema = z.object({ type: z.literal("leave"), peer: peerId });
export const roomErrorSchema = errorFrameSchema;
export { pongSchema };

export const roomServerMessageSchema = z.discriminatedUnion("type", [
  challengeSchema,
  welcomeSchema,
  peerJoinedSchema,
  peerLeftSchema,
  roomErrorSchema,
  pongSchema,
]);
export type RoomServerMessage = z.infer<typeof roomServerMessageSchema>;
