// Notes (the Minca protocol section 2.5; docs/minca-rooms.md signing profile): a delegation from a key to
// another, { payload, sig, type: "minca/ucan/dlg@1" }, signed over
// UTF-8("minca/ucan/dlg@1") ‖ 0x00 ‖ UTF-8(JCS(payload)) by the payload's `iss` (a P-256 did:key).
import * as z from "zod";
import { base64urlEncode, concatBytes, randomBytes, utf8Encode } from "../encoding";
import { isP256DidKey } from "./did-key";
import { es256SignB64, es256Verify, type P256Key } from "./es256";
import { canonicalize } from "./jcs";
import { MINCA_HOST_LIMITS } from "../limits";
import { RecentMap } from "../recent-map";

export const NOTE_TYPE = "minca/ucan/dlg@1";

const did = z
  .string()
  .max(256)
  .refine((d) => d.startsWith("did:"), "not a did");
const seconds = z
  .number()
  .int()
  .min(0)
  .max(2 ** 53 - 1);

export const notePayloadSchema = z
  .object({
    iss: did,
    aud: did,
    sub: z.string().min(1).max(256),
    cmd: z.string().regex(/^\/([a-z0-9_-]+(\/[a-z0-9_-]+)*)?$/, "not a command"),
    pol: z.array(z.unknown()).max(64),
    exp: seconds.nullable(),
    nbf: seconds.optional(),
    nonce: z.string().min(1).max(64),
    meta: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export type NotePayload = z.infer<typeof notePayloadSchema>;

export const noteSchema = z
  .object({
    payload: z.record(z.string(), z.unknown()),
    sig: z.string().max(128),
    type: z.literal(NOTE_TYPE),
  })
  .strict();
export type Note = { payload: NotePayload; sig: string; type: typeof NOTE_TYPE };

export function noteBytes(payload: NotePayload): Uint8Array {
  return signedText(payload).bytes;
}

/** What a note's signature covers, as bytes and as the text that names it in the cache below. */
function signedText(payload: NotePayload): { text: string; bytes: Uint8Array } {
  const jcs = canonicalize(payload);
  return { text: jcs, bytes: concatBytes(utf8Encode(NOTE_TYPE), Uint8Array.of(0), utf8Encode(jcs)) };
}

/**
 * Notes whose signature verified lately, keyed by the signature and the exact text it covers (the
 * payload's JCS, iss included): a device writes every version under the same note, so a host
 * verifies that note once and each version's own signature every time. A hit stands only for
 * "this iss signed these bytes"; what the note grants (its aud, sub, policy, command, time) is
 * checked against each use by the caller, every time. Only verified notes are kept.
 */
const verifiedNotes = new RecentMap<string, true>(MINCA_HOST_LIMITS.verified_notes_kept);

/** A fresh nonce for a note. */
export function noteNonce(): string {
  return base64urlEncode(randomBytes(12));
}

/** Signs a note; `issuer.did` must be the payload's iss. */
export async function signNote(issuer: P256Key, payload: NotePayload): Promise<Note> {
  if (payload.iss !== issuer.did) throw new Error("a note is signed by its iss");
  const checked = notePayloadSchema.parse(payload);
  return { payload: checked, sig: await es256SignB64(issuer, noteBytes(checked)), type: NOTE_TYPE };
}

export type NoteCheck = { ok: true; note: Note } | { ok: false; reason: string };

/**
 * Whether `value` verifies as a note: its shape, an iss that is a P-256 did:key, and its
 * signature. With `now` (unix seconds), also its time bounds (live checks only; records are
 * judged with no time).
 */
export async function verifyNote(value: unknown, now?: number): Promise<NoteCheck> {
  const outer = noteSchema.safeParse(value);
  if (!outer.success) return { ok: false, reason: "not a note" };
  const payload = notePayloadSchema.safeParse(outer.data.payload);
  if (!payload.success) return { ok: false, reason: "the note's payload is malformed" };
  const signed = signedText(payload.data);
  const cacheKey = `${outer.data.sig}.${signed.text}`;
  if (verifiedNotes.get(cacheKey) === undefined) {
    if (!isP256DidKey(payload.data.iss)) return { ok: false, reason: "the note's issuer is not a P-256 did:key" };
    if (!(await es256Verify(payload.data.iss, outer.data.sig, signed.bytes))) {
      return { ok: false, reason: "the note's signature does not verify" };
    }
    verifiedNotes.set(cacheKey, true);
  }
  if (now !== undefined) {
    if (payload.data.exp !== null && now >= payload.data.exp) return { ok: false, reason: "the note has expired" };
    if (payload.data.nbf !== undefined && now < payload.data.nbf) return { ok: false, reason: "the note is not valid yet" };
  }
  return { ok: true, note: { payload: payload.data, sig: outer.data.sig, type: NOTE_TYPE } };
}

/** Whether a command is /record or under it (records only, the Minca protocol §01 §8). */
export function isRecordsOnly(cmd: string): boolean {
  return cmd === "/record" || cmd.startsWith("/record/");
}
