// What a host reads in an account's carry space (the Minca protocol §4.2-4.3; docs/hosting.md-8.5): the
// CarryGrant it is connected with and its checks, passes (accepted only by the Minca protocol's rule),
// carry:closed, links and their topics, and (section 8.5) wakes and receivers. Pure decisions:
// the Durable Objects store what these functions accept.
import { ed25519 } from "@noble/curves/ed25519.js";
import { sha256 } from "@noble/hashes/sha2.js";
import * as z from "zod";
import { base64urlDecode, base64urlEncode, concatBytes, utf8Encode } from "../encoding";
import { MINCA_HOST_LIMITS } from "../limits";
import { pushSubscriptionSchema } from "../webpush/subscription";
import { ed25519DidKey, isEd25519DidKey, isP256DidKey } from "./did-key";
import { isMincaId, keyHash } from "./id";
import { decodeInvite } from "./invite";
import { carryNonce, constitutionSchema, readKeyDid, readSeedOf, spaceId, type Constitution } from "./space";
import { versionBody, type Version } from "./version";
import { REVOKE, revokeKey } from "./revoke";

export { isSelfRevoke, REVOKE, revokeKey } from "./revoke";

export const PASS = "sys.pass";
export const LINK = "sys.link";
export const WAKE = "sys.wake";
export const RECEIVER = "sys.receiver";
export const CLOSED_KEY = "carry:closed";
const LINK_TOPIC_LABEL = "minca/link-topic/v1";

/** The key of a space's pass: pass:<hex of the first 20 bytes of SHA-256(utf8(space id))>. */
export function passKey(space: string): string {
  return `pass:${keyHash(space)}`;
}

/** The key of a receiver: receiver:<hex of the first 20 bytes of SHA-256(utf8(endpoint))>. */
export function receiverKey(endpoint: string): string {
  return `receiver:${keyHash(endpoint)}`;
}

/**
 * A carry-space version that frees space or ends something, read from its outside (the profile's
 * "Revocations"): a revoke, a deletion of a pass, wake, receiver or link, and carry:closed. A host
 * never refuses one for storage: it may take the account past its quota, and the host past its
 * total, by relief_overdraft_bytes, so a person can always sign out, free space or leave.
 */
export function isRelief(v: { collection: string; key: string; deleted?: boolean }): boolean {
  const deleted = v.deleted === true;
  if (v.collection === REVOKE) return !deleted;
  if (v.collection === PASS && v.key === CLOSED_KEY) return !deleted;
  return deleted && [PASS, WAKE, RECEIVER, LINK].includes(v.collection);
}

// ---- CarryGrant (the Minca protocol §4.3) ----------------------------------------------------------------

export const carryGrantSchema = z
  .object({
    v: z.literal(1),
    kind: z.string(),
    did: z.string().refine(isP256DidKey, "did is the account's P-256 did:key"),
    name: z.string().max(256).optional(),
    carry: z.object({ space: z.string(), invite: z.string() }).strict(),
    pod: z
      .object({ dataPath: z.string().max(1024), folder: z.string().max(256) })
      .strict()
      .nullable()
      .optional(),
    relays: z.array(z.string().max(2048)).max(64).optional(),
  })
  .strict();
export type CarryGrant = z.infer<typeof carryGrantSchema>;

export interface CarryStart {
  account: string;
  name?: string;
  carrySpace: string;
  constitution: Constitution;
  key: Uint8Array;
}

export type CarryGrantCheck = { ok: true; start: CarryStart } | { ok: false; reason: string };

/**
 * The carrier's checks of a CarryGrant (the Minca protocol §4.3): kind is carry; the invite is to the named
 * space; the space is private with did its one founder and no roles; the invite carries its key
 * (and that key makes the constitution's read key); pod.dataPath has no empty or ".." segment.
 * With `carrierDid`, the carry space must also be derived for this carrier (its nonce names it).
 */
export function checkCarryGrant(value: unknown, carrierDid?: string): CarryGrantCheck {
  const g = carryGrantSchema.safeParse(value);
  if (!g.success) return { ok: false, reason: "the grant is malformed" };
  const grant = g.data;
  if (grant.kind !== "carry") return { ok: false, reason: "kind is not carry" };
  const inv = decodeInvite(grant.carry.invite);
  if (!inv.ok) return { ok: false, reason: inv.reason };
  const { invite } = inv;
  if (invite.space !== grant.carry.space) return { ok: false, reason: "the invite is to another space" };
  const c = invite.constitution;
  if (c.visibility !== "private") return { ok: false, reason: "the carry space is not private" };
  if (c.founders.length !== 1 || c.founders[0] !== grant.did)
    return { ok: false, reason: "the account is not the carry space's one founder" };
  if (!invite.key) return { ok: false, reason: "the invite does not carry the space's key" };
  if (readKeyDid(readSeedOf(invite.key)) !== c.readKey) return { ok: false, reason: "the invite's key is not the space's key" };
  if (grant.pod) {
    const segments = grant.pod.dataPath.split("/");
    if (segments.some((s) => s === "" || s === "..")) return { ok: false, reason: "pod.dataPath has an empty or .. segment" };
  }
  const gen = carryGenOf(c.nonce);
  if (gen === null) return { ok: false, reason: "the carry space's nonce names no gen (carry:<carrier did>:<non-negative integer>)" };
  if (carrierDid !== undefined && c.nonce !== carryNonce(carrierDid, gen)) {
    return { ok: false, reason: "the carry space is not derived for this carrier" };
  }
  return { ok: true, start: { account: grant.did, name: grant.name, carrySpace: invite.space, constitution: c, key: invite.key } };
}

/**
 * The gen a carry space's nonce names (the Minca protocol §4.2: "a gen that is not a non-negative integer names
 * no carry space"): `carry:<carrier did>:<gen>` with gen in canonical decimal (no sign, no leading
 * zero, no fraction, a safe integer); null for anything else (-1, abc, 01, 1.5, nothing).
 */
export function carryGenOf(nonce: string): number | null {
  const m = /^carry:.+:(0|[1-9][0-9]{0,15})$/.exec(nonce);
  if (!m) return null;
  const gen = Number(m[1]);
  return Number.isSafeInteger(gen) ? gen : null;
}

/** The CarryGrant a home answers a carrier with (the Minca protocol §4.3), for a carry space the account derived. */
export function carryGrant(opts: {
  account: string;
  name?: string;
  carrySpace: { id: string };
  invite: string;
  relays?: string[];
}): CarryGrant {
  const g: CarryGrant = { v: 1, kind: "carry", did: opts.account, carry: { space: opts.carrySpace.id, invite: opts.invite }, pod: null };
  if (opts.name !== undefined) g.name = opts.name;
  if (opts.relays !== undefined) g.relays = opts.relays;
  return g;
}

export { carryNonce };

// ---- records in the carry space ------------------------------------------------------------

const b64 = z.string().regex(/^[A-Za-z0-9_-]+$/, "base64url");

export const passBodySchema = z
  .object({
    v: z.literal(1),
    constitution: constitutionSchema,
    readSeed: b64.optional(),
    readKey: z.string().refine(isEd25519DidKey, "readKey is an Ed25519 did:key").optional(),
    own: z.literal(true).optional(),
  })
  .strict();
export type PassBody = z.infer<typeof passBodySchema>;

/** A revoke (the relay's hosting profile, "Revocations"): the key, and optionally a cutoff in unix ms. */
export const revokeBodySchema = z
  .object({
    v: z.literal(1),
    key: z.string().refine(isP256DidKey, "key is a P-256 did:key"),
    cutoff: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
  })
  .strict();
export type RevokeBody = z.infer<typeof revokeBodySchema>;

export const closedBodySchema = z.object({ v: z.literal(1), closed: z.literal(true) }).strict();

export const linkBodySchema = z
  .object({
    v: z.literal(1),
    blob: b64.max(Math.ceil((MINCA_HOST_LIMITS.max_version_bytes * 4) / 3)),
    until: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  })
  .strict();

export const wakeBodySchema = z
  .object({
    v: z.literal(1),
    name: z.string().min(1).max(256),
    spaces: z.union([
      z.literal("all"),
      z.array(z.string().refine(isMincaId, "not a space id")).min(1).max(MINCA_HOST_LIMITS.max_spaces_per_account),
    ]),
    collection: z.string().min(1).max(MINCA_HOST_LIMITS.max_name_chars),
    topics: z.array(z.string().min(1).max(MINCA_HOST_LIMITS.max_name_chars)).max(MINCA_HOST_LIMITS.max_topics).optional(),
    others: z.literal(true).optional(),
    open: z.string().max(2048).optional(),
  })
  .strict();
export type WakeBody = z.infer<typeof wakeBodySchema>;

export const receiverBodySchema = z
  .object({ v: z.literal(1), device: z.string().max(256), push: pushSubscriptionSchema.omit({ expirationTime: true }).strict() })
  .strict();
export type ReceiverBody = z.infer<typeof receiverBodySchema>;

/** A link's topic: base64url(SHA-256(UTF-8("minca/link-topic/v1") ‖ blob)), computed from the blob itself. */
export function linkTopic(blob: Uint8Array): string {
  return base64urlEncode(sha256(concatBytes(utf8Encode(LINK_TOPIC_LABEL), blob)));
}

/** What one accepted carry-space version means to the host. */
export type CarryRecord =
  | { kind: "pass"; space: string; constitution: Constitution; readKey?: string; own: boolean; at: number }
  | { kind: "revoke"; revoked: string; cutoff: number | null }
  | { kind: "pass_deleted"; key: string }
  | { kind: "closed" }
  | { kind: "link"; key: string; blob: Uint8Array; topic: string; until: number; at: number }
  | { kind: "link_deleted"; key: string }
  | { kind: "wake"; key: string; wake: WakeBody }
  | { kind: "wake_deleted"; key: string }
  | { kind: "receiver"; key: string; receiver: ReceiverBody }
  | { kind: "receiver_deleted"; key: string }
  | { kind: "other" }
  | {
      kind: "refused";
      reason: "unreadable_record" | "pass_space_mismatch" | "pass_read_key_mismatch" | "own_space_mismatch";
      detail: string;
    };

/**
 * Reads a version of the carry space (one that passed the gates: written by the account under a
 * note granting /account/write) with the carry space's body key. A pass counts only if its
 * constitution hashes to the space its key names and, for a private space, the read seed's did
 * is the constitution's readKey or the pass's own.
 */
export function readCarryRecord(v: Version, bodyKey: Uint8Array): CarryRecord {
  // Client input: whatever is wrong with it is a refusal, never a throw in the middle of a batch.
  try {
    return readCarryRecordOrThrow(v, bodyKey);
  } catch {
    return { kind: "refused", reason: "unreadable_record", detail: "the record cannot be read" };
  }
}

function readCarryRecordOrThrow(v: Version, bodyKey: Uint8Array): CarryRecord {
  const deleted = v.deleted === true;
  const body = deleted ? null : versionBody(v, bodyKey);
  const unreadable = (what: string): CarryRecord => ({ kind: "refused", reason: "unreadable_record", detail: what });
  switch (v.collection) {
    case PASS: {
      if (v.key === CLOSED_KEY) {
        if (deleted) return { kind: "other" };
        return closedBodySchema.safeParse(body).success ? { kind: "closed" } : unreadable("carry:closed is { v: 1, closed: true }");
      }
      if (deleted) return { kind: "pass_deleted", key: v.key };
      const p = passBodySchema.safeParse(body);
      if (!p.success) return unreadable("the pass does not open as a SpacePass");
      const space = spaceId(p.data.constitution);
      if (passKey(space) !== v.key) {
        return {
          kind: "refused",
          reason: "pass_space_mismatch",
          detail: "the pass's constitution does not hash to the space its key names",
        };
      }
      const own = p.data.own === true;
      const founders = p.data.constitution.founders;
      if (own && !(founders.length === 1 && founders[0] === v.note.payload.iss)) {
        return {
          kind: "refused",
          reason: "own_space_mismatch",
          detail: "only a space the account founded alone is one of its own (own: true)",
        };
      }
      if (p.data.constitution.visibility === "public") {
        if (p.data.readSeed !== undefined) return unreadable("a public space's pass has no read seed");
        return { kind: "pass", space, constitution: p.data.constitution, own, at: v.at };
      }
      let did: string;
      try {
        const seed = base64urlDecode(p.data.readSeed ?? "");
        if (seed.length !== 32) throw new Error("seed");
        did = ed25519DidKey(ed25519.getPublicKey(seed));
      } catch {
        return { kind: "refused", reason: "pass_read_key_mismatch", detail: "a private space's pass carries a 32-byte read seed" };
      }
      if (did !== p.data.constitution.readKey && did !== p.data.readKey) {
        return {
          kind: "refused",
          reason: "pass_read_key_mismatch",
          detail: "the read seed's did is neither the constitution's readKey nor the pass's",
        };
      }
      return { kind: "pass", space, constitution: p.data.constitution, readKey: did, own, at: v.at };
    }
    case REVOKE: {
      // A stored revoke is kept for good: deleting or rewriting its record takes nothing back.
      if (deleted) return { kind: "other" };
      const r = revokeBodySchema.safeParse(body);
      if (!r.success) return unreadable("a revoke is { v: 1, key: <did:key>, cutoff?: <unix ms> }");
      if (revokeKey(r.data.key) !== v.key) return unreadable("a revoke's key is revoke:<hash of the did it revokes>");
      return { kind: "revoke", revoked: r.data.key, cutoff: r.data.cutoff ?? null };
    }
    case LINK: {
      if (deleted) return { kind: "link_deleted", key: v.key };
      const l = linkBodySchema.safeParse(body);
      if (!l.success) return unreadable("a link is { v: 1, blob, until }");
      let blob: Uint8Array;
      try {
        blob = base64urlDecode(l.data.blob);
      } catch {
        return unreadable("a link's blob is not base64url (a length of 4k+1 characters never is)");
      }
      return { kind: "link", key: v.key, blob, topic: linkTopic(blob), until: l.data.until, at: v.at };
    }
    case WAKE: {
      if (deleted) return { kind: "wake_deleted", key: v.key };
      const w = wakeBodySchema.safeParse(body);
      return w.success ? { kind: "wake", key: v.key, wake: w.data } : unreadable("a wake does not match docs/hosting.md");
    }
    case RECEIVER: {
      if (deleted) return { kind: "receiver_deleted", key: v.key };
      const r = receiverBodySchema.safeParse(body);
      if (!r.success) return unreadable("a receiver does not match docs/hosting.md");
      if (receiverKey(r.data.push.endpoint) !== v.key) return unreadable("a receiver's key is receiver:<hash of its endpoint>");
      return { kind: "receiver", key: v.key, receiver: r.data };
    }
    default:
      return { kind: "other" };
  }
}

/** A pass body for a space (what a device writes, the Minca protocol §4.2). */
export function passBody(space: { constitution: Constitution; key?: Uint8Array }, readKey?: string, own?: boolean): PassBody {
  const body: PassBody = { v: 1, constitution: space.constitution };
  if (space.key) body.readSeed = base64urlEncode(readSeedOf(space.key));
  if (readKey !== undefined) body.readKey = readKey;
  if (own) body.own = true;
  return body;
}

// ---- which version of a record counts (the relay's hosting profile, "Carried spaces") -----------

/** A version's place in its record key's order: (`at`, version id). */
export interface Written {
  at: number;
  id: string;
}

/**
 * Last writer wins per record key by (`at`, version id), deletions included: whether `v`
 * replaces what the host holds for its key (`held`: the latest version it took, a deletion
 * included). An older version arriving after a newer deletion never brings the record back.
 */
export function supersedes(held: Written | undefined, v: Written): boolean {
  if (!held) return true;
  return v.at > held.at || (v.at === held.at && v.id > held.id);
}

/**
 * Whether a version a revoked key signed still counts (the Minca protocol §1.2, §2.10: nothing
 * that key signed counts "except what the revoker had already seen of it"). A revoke keeps
 * everything the key wrote before it was stored; with a `cutoff`, only what it wrote at or
 * before the cutoff. (What the key signs after the revoke is refused when it arrives.)
 */
export function countsAfterRevoke(at: number, cutoff: number | null): boolean {
  return cutoff === null || at <= cutoff;
}

/**
 * Two revokes of one key: a revoke is never undone, so the stricter cutoff stands (none is the
 * loosest).
 */
export function strictestCutoff(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.min(a, b);
}
