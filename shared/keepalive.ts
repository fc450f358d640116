// The keepalive every socket protocol of the relay shares: a client sends `{"type":"ping"}`, the
// relay answers `{"type":"pong"}` (without waking the object). Part of each protocol's unions.
import * as z from "zod";

export const pingSchema = z.object({ type: z.literal("ping") });
export const pongSchema = z.object({ type: z.literal("pong") });
