// Versions (docs/hosting.md): one write of one record as it travels, its id and signature, its sealed
// body, its outside (what a carrier sees, the Minca protocol §4.1), and the gates a host runs it through —
// every check that needs no body. A version that fails one is refused with a reason.
import * as z from "zod";
import { base64urlDecode, base64urlEncode, concatBytes, utf8Encode } from "../encoding";
import { formatIssue } from "../errors";
import { lostMember } from "../json-raw";
import { MINCA_HOST_LIMITS } from "../limits";
import { isP256DidKey } from "./did-key";
import { es256SignB64, es256Verify, type P256Key } from "./es256";
import { digestMincaId, isMincaId, mincaId } from "./id";
import { canonicalize } from "./jcs";
import { verifyNote, type Note } from "./note";
import { commandCovers, policyAllows } from "./policy";
import { isSelfRevoke } from "./revoke";
import { openBody, sealBody, type Constitution } from "./space";

const VERSION_LABEL = "minca/version/v1";
/** What writing a record needs of a note; in the account's own machinery, what writing it needs. */
export const RECORD_WRITE = "/record/write";
export const ACCOUNT_WRITE = "/account/write";

const name = z.string().min(1).max(MINCA_HOST_LIMITS.max_name_chars);

export const versionSchema = z
  .object({
    v: z.literal(1),
    space: z.string().refine(isMincaId, "not a space id"),
    collection: name,
    key: name,
    author: z.string().refine(isP256DidKey, "author is a P-256 did:key"),
    at: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    topics: z.array(name).max(MINCA_HOST_LIMITS.max_topics),
    deleted: z.literal(true).optional(),
    body: z.record(z.string(), z.unknown()).optional(),
    sealed: z
      .string()
      .regex(/^[A-Za-z0-9_-]+$/, "sealed is base64url")
      .optional(),
    note: z.unknown(),
    id: z.string().refine(isMincaId, "not a version id"),
    sig: z.string().max(128),
  })
  .strict()
  .refine((v) => !(v.body !== undefined && v.sealed !== undefined), "a version has a body or a sealed body, not both")
  .refine((v) => !(v.deleted && (v.body !== undefined || v.sealed !== undefined)), "a deletion has no body");
export type Version = Omit<z.infer<typeof versionSchema>, "note"> & { note: Note };

/** What a carrier sees of a version (the Minca protocol §4.1). */
export interface Outside {
  id: string;
  space: string;
  collection: string;
  key: string;
  author: string;
  at: number;
  topics: string[];
  deleted: boolean;
}

export function outsideOf(v: Version): Outside {
  return {
    id: v.id,
    space: v.space,
    collection: v.collection,
    key: v.key,
    author: v.author,
    at: v.at,
    topics: v.topics,
    deleted: v.deleted === true,
  };
}

/** id = "b" + base32(SHA-256(UTF-8(JCS(version without id and sig)))). */
export function versionId(v: Record<string, unknown>): string {
  const { id: _id, sig: _sig, ...rest } = v;
  return mincaId(utf8Encode(canonicalize(rest)));
}

/** versionId, hashed natively (a host checks every version's id). */
async function digestVersionId(v: Record<string, unknown>): Promise<string> {
  const { id: _id, sig: _sig, ...rest } = v;
  return digestMincaId(utf8Encode(canonicalize(rest)));
}

export function versionSigBytes(id: string): Uint8Array {
  return concatBytes(utf8Encode(VERSION_LABEL), Uint8Array.of(0), utf8Encode(id));
}

export interface VersionInput {
  space: string;
  collection: string;
  key: string;
  /** The session key that signs; its did is `author` and must be the note's aud. */
  author: P256Key;
  note: Note;
  at?: number;
  topics?: string[];
  body?: Record<string, unknown>;
  deleted?: boolean;
  /** A private space's body key: the body is sealed with it. */
  bodyKey?: Uint8Array;
}

/** Builds, seals (with a body key) and signs a version. */
export async function buildVersion(input: VersionInput): Promise<Version> {
  const draft: Record<string, unknown> = {
    v: 1,
    space: input.space,
    collection: input.collection,
    key: input.key,
    author: input.author.did,
    at: input.at ?? Date.now(),
    topics: input.topics ?? [],
    note: input.note,
  };
  if (input.deleted) draft.deleted = true;
  else if (input.body !== undefined) {
    if (input.bodyKey) draft.sealed = base64urlEncode(sealBody(input.bodyKey, input.body));
    else draft.body = input.body;
  }
  const id = versionId(draft);
  const sig = await es256SignB64(input.author, versionSigBytes(id));
  return { ...(draft as Omit<Version, "id" | "sig">), id, sig };
}

/** The body of a version: its clear body, or its sealed one opened with the body key; null if none opens. */
export function versionBody(v: Version, bodyKey?: Uint8Array): Record<string, unknown> | null {
  if (v.body !== undefined) return v.body;
  if (v.sealed === undefined || !bodyKey) return null;
  let sealed: Uint8Array;
  try {
    sealed = base64urlDecode(v.sealed);
  } catch {
    return null;
  }
  const b = openBody(bodyKey, sealed);
  return b !== null && typeof b === "object" && !Array.isArray(b) ? (b as Record<string, unknown>) : null;
}

/** Why a version is refused (each is answered as `reason`). */
export const VERSION_REFUSALS = [
  "malformed",
  "too_large",
  "wrong_space",
  "id_mismatch",
  "bad_signature",
  "bad_note",
  "note_audience",
  "note_subject",
  "note_policy",
  "note_command",
  "not_founder",
  "body_in_private_space",
  "sealed_in_public_space",
  "unreadable_record",
  "pass_space_mismatch",
  "pass_read_key_mismatch",
  "too_many_spaces",
  "too_many_wakes",
  "too_many_receivers",
  "invalid_receiver",
  "own_space_mismatch",
  "not_account_write",
  "revoked",
  "too_many_carriers",
  "too_many_link_accounts",
  "storage_full",
  "from_future",
] as const;
export type VersionRefusal = (typeof VERSION_REFUSALS)[number];

export type VersionCheck = { ok: true; version: Version } | { ok: false; id?: string; reason: VersionRefusal; detail: string };

export interface GateContext {
  /** The space the versions are posted to. */
  space: string;
  constitution: Constitution;
  /** The account's own spaces (its carry space, a space its pass says is its own): a note must grant /account/write (the Minca protocol §1.3). */
  ownMachinery: boolean;
  /** The host's clock (unix ms; default now): a version's `at` may be at most max_future_ms ahead of it. */
  now?: number;
}

const refuse = (reason: VersionRefusal, detail: string, id?: string): VersionCheck => ({
  ok: false,
  reason,
  detail,
  ...(id ? { id } : {}),
});

/**
 * The gates of docs/hosting.md, in order: well-formed and within bounds; the space; the id; the
 * signature; `at` at most max_future_ms ahead of the host's clock; the note (verifies, aud is the author, sub covers the space, policy allows the
 * collection, command covers the write); its root is a founder; a private space's body is sealed.
 * Records are judged with no time: the note's exp is not checked.
 */
export async function checkVersion(value: unknown, ctx: GateContext, bytes?: number, raw?: string): Promise<VersionCheck> {
  const claimedId =
    typeof value === "object" &&
    value !== null &&
    typeof (value as { id?: unknown }).id === "string" &&
    isMincaId((value as { id: string }).id)
      ? (value as { id: string }).id
      : undefined;
  if (bytes !== undefined && bytes > MINCA_HOST_LIMITS.max_version_bytes) {
    return refuse("too_large", `a version is at most ${MINCA_HOST_LIMITS.max_version_bytes} bytes`, claimedId);
  }
  // What the host stores is the raw text: a member the schema would drop or rename (__proto__, a
  // repeated name) would make it store a version other nodes read differently.
  const lost = raw === undefined ? null : lostMember(raw, value);
  if (lost !== null) return refuse("malformed", `the version's JSON holds ${lost}`, claimedId);
  const parsed = versionSchema.safeParse(value);
  if (!parsed.success) {
    return refuse("malformed", `version: ${formatIssue(parsed.error)}`, claimedId);
  }
  const v = parsed.data;
  if (v.space !== ctx.space) return refuse("wrong_space", "the version names another space", v.id);
  let id: string;
  try {
    id = await digestVersionId(v as unknown as Record<string, unknown>);
  } catch {
    return refuse("malformed", "the version has no canonical form", v.id);
  }
  if (id !== v.id) return refuse("id_mismatch", "the id is not the hash of the version", v.id);
  if (!(await es256Verify(v.author, v.sig, versionSigBytes(v.id)))) return refuse("bad_signature", "the signature does not verify", v.id);
  const ahead = MINCA_HOST_LIMITS.max_future_ms;
  if (v.at > (ctx.now ?? Date.now()) + ahead)
    return refuse("from_future", `a version's at is at most ${ahead / 60_000} minutes ahead of the host's clock`, v.id);
  const note = await verifyNote(v.note);
  if (!note.ok) return refuse("bad_note", note.reason, v.id);
  const p = note.note.payload;
  if (p.aud !== v.author) return refuse("note_audience", "the note is made out to another key", v.id);
  if (p.sub !== p.iss && p.sub !== `space:${v.space}`) return refuse("note_subject", "the note's subject does not cover this space", v.id);
  // Signing out: any key may revoke itself, whatever its note grants (the account's own spaces included).
  const selfRevoke = isSelfRevoke(v);
  if (!selfRevoke && !policyAllows(p.pol, { space: v.space, collection: v.collection }))
    return refuse("note_policy", "the note's policy does not allow this write", v.id);
  if (ctx.ownMachinery && !selfRevoke && !commandCovers(p.cmd, ACCOUNT_WRITE)) {
    return refuse("not_account_write", `in the account's own spaces a version counts only under a note granting ${ACCOUNT_WRITE}`, v.id);
  }
  if (!ctx.ownMachinery && !selfRevoke && !commandCovers(p.cmd, RECORD_WRITE))
    return refuse("note_command", `the note's command does not grant ${RECORD_WRITE}`, v.id);
  if (!ctx.constitution.founders.includes(p.iss)) return refuse("not_founder", "the note is not rooted at a founder of the space", v.id);
  if (ctx.constitution.visibility === "private" && v.body !== undefined)
    return refuse("body_in_private_space", "a private space's bodies are sealed", v.id);
  if (ctx.constitution.visibility === "public" && v.sealed !== undefined)
    return refuse("sealed_in_public_space", "a public space's bodies are in the clear", v.id);
  return { ok: true, version: { ...v, note: note.note } };
}

/** The root (iss) of a version's note: the account it writes for. */
export function rootOf(v: Version): string {
  return v.note.payload.iss;
}
