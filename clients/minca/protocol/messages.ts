// Every message of the code exchange (the Minca protocol section 3, docs/minca-rooms.md): the three in the
// clear and the bodies of the sealed ones, as zod schemas. Sealed messages are numbered per
// direction; SEQ says which number each one has in an exchange that follows the protocol.
import * as z from "zod";
import { base64urlDecode } from "../../../shared/encoding";
import { DID_KEY_MAX_CHARS } from "../../../shared/minca/did-key";

export const CODE_TYPES = {
  hello: "code:hello",
  key: "code:key",
  point: "code:point",
  home: "code:home",
  ask: "code:ask",
  heard: "code:heard",
  answer: "code:answer",
  done: "code:done",
} as const;

/** The seq of each sealed message in its direction (home→program: home, heard, answer; program→home: ask, done). */
export const SEQ = {
  home: 0,
  heard: 1,
  answer: 2,
  ask: 0,
  done: 1,
} as const;

const b64urlBytes = (n: number) =>
  z.string().refine((s) => {
    try {
      return base64urlDecode(s).length === n;
    } catch {
      return false;
    }
  }, `not ${n} bytes of base64url`);

export const helloSchema = z.object({ commit: b64urlBytes(32) });
export const keySchema = z.object({ key: b64urlBytes(32) });
export const pointSchema = keySchema;

export const homeBodySchema = z.object({ origin: z.string().min(1).max(2048) });
export const askBodySchema = z.object({
  did: z.string().max(DID_KEY_MAX_CHARS),
  proof: z.string().max(128),
  name: z.string().max(256),
});
export const heardBodySchema = z.object({});
export const answerBodySchema = z.union([
  z.object({ grant: z.record(z.string(), z.unknown()) }),
  z.object({ denied: z.string().max(1024) }),
]);
export const doneBodySchema = z.object({});

/** What a home shows of a program's name: a name only, at most this many characters. */
export const MAX_SHOWN_NAME_CHARS = 80;
