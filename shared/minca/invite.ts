// View-only invites (docs/hosting.md): base64url(UTF-8(JCS({ v: 1, space, constitution, key? }))), the
// key present for a private space, never a role secret.
import * as z from "zod";
import { parseClientJson } from "../client-json";
import { base64urlDecode, base64urlEncode, utf8Decode, utf8Encode } from "../encoding";
import { isMincaId } from "./id";
import { canonicalize } from "./jcs";
import { constitutionSchema, SPACE_KEY_BYTES, spaceId, type Space } from "./space";

/** Longest invite accepted, characters (a constitution with 16 founders fits well within). */
const INVITE_MAX_CHARS = 8_192;

const b64key = z.string().regex(/^[A-Za-z0-9_-]{43}$/, "key is base64url of 32 bytes");

const inviteSchema = z
  .object({
    v: z.literal(1),
    space: z.string().refine(isMincaId, "not a space id"),
    constitution: constitutionSchema,
    key: b64key.optional(),
  })
  .strict();

interface Invite {
  space: string;
  constitution: Space["constitution"];
  key?: Uint8Array;
}

export function encodeInvite(space: Space): string {
  const body: Record<string, unknown> = { v: 1, space: space.id, constitution: space.constitution };
  if (space.key) body.key = base64urlEncode(space.key);
  return base64urlEncode(utf8Encode(canonicalize(body)));
}

type InviteRead = { ok: true; invite: Invite } | { ok: false; reason: string };

/** Reads an invite: its shape, and that the constitution hashes to the space it names. */
export function decodeInvite(s: unknown): InviteRead {
  if (typeof s !== "string" || s.length > INVITE_MAX_CHARS) return { ok: false, reason: "not an invite" };
  let text: string;
  try {
    text = utf8Decode(base64urlDecode(s));
  } catch {
    return { ok: false, reason: "the invite is not base64url of UTF-8" };
  }
  const json = parseClientJson(text);
  if (!json.ok) return { ok: false, reason: `the invite is not JSON: ${json.reason}` };
  const r = inviteSchema.safeParse(json.value);
  if (!r.success) return { ok: false, reason: "the invite is malformed" };
  let id: string;
  try {
    id = spaceId(r.data.constitution);
  } catch {
    return { ok: false, reason: "the constitution has no canonical form" };
  }
  if (id !== r.data.space) return { ok: false, reason: "the constitution does not hash to the invite's space" };
  const invite: Invite = { space: r.data.space, constitution: r.data.constitution };
  if (r.data.key !== undefined) {
    const key = base64urlDecode(r.data.key);
    if (key.length !== SPACE_KEY_BYTES) return { ok: false, reason: "the key is not 32 bytes" };
    invite.key = key;
  }
  return { ok: true, invite };
}
