// Every message on the Tally relay wire (docs/tally.md), as zod schemas with inferred types.
// The relay validates what clients send with these; the client SDK parses what the relay sends.
import * as z from "zod";
import { rawMember, withRawMember } from "../json-raw";
import { isNpub } from "./keys";
import { TALLY_LIMITS } from "../limits";
import { errorFrameSchema } from "../errors";
import { pingSchema, pongSchema } from "../keepalive";

export const npubSchema = z.string().refine((s) => isNpub(s), "not a valid npub");
export const deviceIdSchema = z.string().regex(/^[0-9a-f]{16}$/, "not a 16-hex device id");
export const envelopeIdSchema = z.string().min(1).max(TALLY_LIMITS.max_envelope_id_chars);

// ---- client to relay ---------------------------------------------------------------------

export const registerSchema = z.object({
  type: z.literal("register"),
  user_id: npubSchema,
  auth: z.unknown(),
  acks: z.boolean().optional(),
});

/** The envelope itself is checked by peerEnvelopeSchema (envelope.ts) in the handler, so that its errors name it. */
export const queuePeerEnvelopeSchema = z.object({
  type: z.literal("queue_peer_envelope"),
  envelope: z.record(z.string(), z.unknown()),
});

export const ackSchema = z.object({
  type: z.literal("ack"),
  id: envelopeIdSchema,
  from_user_id: npubSchema,
});

export const connectPeerSchema = z.object({
  type: z.literal("connect_peer"),
  peer_user_id: npubSchema,
});

export const webrtcSignalSchema = z.object({
  type: z.literal("webrtc_signal"),
  peer_user_id: npubSchema,
  peer_device_id: deviceIdSchema.optional(),
  signal: z.unknown().refine((v) => v !== undefined, "signal is required"),
});

export type RegisterMessage = z.infer<typeof registerSchema>;
export type QueuePeerEnvelopeMessage = z.infer<typeof queuePeerEnvelopeSchema>;
export type AckMessage = z.infer<typeof ackSchema>;
export type ConnectPeerMessage = z.infer<typeof connectPeerSchema>;
export type WebrtcSignalMessage = z.infer<typeof webrtcSignalSchema>;

/** Every message a client sends the relay, by `type` (the relay routes each to one handler). */
export const clientMessageSchema = z.discriminatedUnion("type", [
  registerSchema,
  queuePeerEnvelopeSchema,
  ackSchema,
  connectPeerSchema,
  webrtcSignalSchema,
  pingSchema,
]);
export type ClientMessage = z.infer<typeof clientMessageSchema>;

// ---- relay to client ---------------------------------------------------------------------

export const QUEUED_STATUSES = ["delivered", "stored", "not_stored"] as const;
export type QueuedStatus = (typeof QUEUED_STATUSES)[number];

export const serverMessageSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("challenge"), challenge: z.string().regex(/^[0-9a-f]{64}$/) }),
  z.object({ type: z.literal("registered"), user_id: npubSchema, device_id: deviceIdSchema, queued: z.number().int().min(0) }),
  z.object({ type: z.literal("queue_drained") }),
  z.looseObject({ type: z.literal("peer_envelope") }),
  z.object({ type: z.literal("queued"), id: z.string(), to_user_id: z.string(), status: z.enum(QUEUED_STATUSES) }),
  z.object({ type: z.literal("peer_connect"), peer_user_id: npubSchema, peer_device_id: deviceIdSchema }),
  z.object({ type: z.literal("peer_disconnect"), peer_user_id: npubSchema, peer_device_id: deviceIdSchema }),
  z.object({ type: z.literal("webrtc_signal"), peer_user_id: npubSchema, peer_device_id: deviceIdSchema, signal: z.unknown() }),
  // The one error frame (shared/errors.ts), read leniently, with retry_after_ms.
  errorFrameSchema,
  pongSchema,
]);

export type ServerMessage = z.infer<typeof serverMessageSchema>;
export type ServerMessageOf<T extends ServerMessage["type"]> = Extract<ServerMessage, { type: T }>;

// ---- frames the relay builds from raw text (bytes it must not change) ----------------------

/**
 * The form an envelope is stored in (and flushed as): the text it arrived in, with the
 * non-normative hint `queued_at` added, unless the envelope already carries one (docs/tally.md).
 */
export function storedEnvelope(raw: string, queuedAt: Date): string {
  return withRawMember(raw, "queued_at", queuedAt.toISOString(), rawMember(raw, "queued_at") !== undefined);
}

/** The webrtc_signal a device receives: the sender's user and device, the signal's JSON as sent. */
export function signalFrame(fromNpub: string, fromDevice: string, signalJson: string): string {
  return `{"type":"webrtc_signal","peer_user_id":${JSON.stringify(fromNpub)},"peer_device_id":${JSON.stringify(fromDevice)},"signal":${signalJson}}`;
}
