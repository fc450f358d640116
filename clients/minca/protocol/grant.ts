// Grants (the Minca protocol sections 2.5, 2.6 and 3): what a home answers with, how a home makes one for a
// program connected by code (records only, the whole account, to the ask's key), and the checks
// every app and program makes before using one.
import * as z from "zod";
import { noteNonce, signNote, verifyNote, isRecordsOnly, type Note } from "../../../shared/minca/note";
import { checkKeyProof } from "./key-proof";
import type { P256Key } from "../../../shared/minca/es256";

const GRANT_VERSION = 2;
const DAY_SECONDS = 86_400;
/** The lifetime a home gives when neither the person nor the request chose one (the Minca protocol §2.5 step 4). */
export const DEFAULT_GRANT_DAYS = 7;
/** The home's own bounds on a grant's lifetime (the Minca protocol §2.5 step 4: "within the home's own bounds"), in days. */
const MIN_GRANT_DAYS = 1 / 24;
export const MAX_GRANT_DAYS = 365;

/**
 * A grant's lifetime in days, within the home's bounds (the Minca protocol §2.5 step 4): unset is the default
 * (7); a finite positive number is clamped to [1 hour, 365 days]; anything else (NaN, an
 * infinity, zero, a negative number) is refused with null: no grant is made from it.
 */
export function grantDays(days: number | undefined): number | null {
  if (days === undefined) return DEFAULT_GRANT_DAYS;
  if (typeof days !== "number" || !Number.isFinite(days) || days <= 0) return null;
  return Math.min(MAX_GRANT_DAYS, Math.max(MIN_GRANT_DAYS, days));
}

const grantSchema = z
  .object({
    v: z.literal(GRANT_VERSION),
    did: z.string().max(256),
    name: z.string().max(256).optional(),
    note: z.unknown(),
    access: z.enum(["write", "read"]),
    scope: z.enum(["account", "spaces"]),
    spaces: z.array(z.unknown()).max(1024).optional(),
    relays: z.array(z.string().max(2048)).max(64).optional(),
    expiresAt: z.number().int(),
    /** Added by the app or program: the connect page it opened (the home never sends it). */
    home: z.string().max(2048).optional(),
  })
  .passthrough();
export type Grant = z.infer<typeof grantSchema> & { note: Note };

/** The ConnectRequest a home makes itself for a program's ask (the Minca protocol §3). */
export interface CodeRequest {
  v: 1;
  audience: string;
  proof: string;
  name?: string;
  via: "code";
  recordsOnly: true;
  access: "write";
  scope: "account";
}

export function codeRequest(ask: { did: string; proof: string; name?: string }): CodeRequest {
  return { v: 1, audience: ask.did, proof: ask.proof, name: ask.name, via: "code", recordsOnly: true, access: "write", scope: "account" };
}

type RequestCheck = { ok: true } | { ok: false; reason: string };

/**
 * A home's checks of a request by code (the Minca protocol §2.5): the proof verifies with the audience key
 * over the statement naming the home's own origin; the audience is not the home's own session
 * key, nor one another connection of another kind holds.
 */
export async function checkCodeRequest(
  req: CodeRequest,
  home: { origin: string; sessionDid?: string; heldElsewhere?: (did: string) => boolean },
): Promise<RequestCheck> {
  if (!req.audience.startsWith("did:key:")) return { ok: false, reason: "the audience is not a did:key" };
  if (!(await checkKeyProof(req.proof, { audience: req.audience, via: "code", recordsOnly: true, origin: home.origin }))) {
    return { ok: false, reason: "the key proof does not verify for this home" };
  }
  if (req.audience === home.sessionDid) return { ok: false, reason: "the audience is the home's own key" };
  if (home.heldElsewhere?.(req.audience)) return { ok: false, reason: "the audience is already connected another way" };
  return { ok: true };
}

export interface Account {
  /** The account's root key; its did is the note's iss and the grant's did. */
  key: P256Key;
  name?: string;
  relays?: string[];
  /**
   * The home's own session key (the Minca protocol §1.2: the key the home's node signs records
   * with): never granted to (§2.10). The home refuses it with no option set.
   */
  session?: { did: string };
}

/**
 * The grant for a program by code (the Minca protocol §3, §2.5): a note from the account's root to the ask's
 * key, cmd /record, sub the account, no policy, for `days` (default 7).
 */
export async function grantByCode(account: Account, req: CodeRequest, opts: { days?: number; now?: number } = {}): Promise<Grant> {
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  const days = grantDays(opts.days);
  if (days === null) throw new RangeError("a grant's lifetime is a finite positive number of days");
  const expiresAt = now + Math.round(days * DAY_SECONDS);
  const note = await signNote(account.key, {
    aud: req.audience,
    cmd: "/record",
    exp: expiresAt,
    iss: account.key.did,
    nbf: now,
    nonce: noteNonce(),
    pol: [],
    sub: account.key.did,
  });
  const grant: Grant = { v: GRANT_VERSION, did: account.key.did, note, access: "write", scope: "account", expiresAt };
  if (account.name !== undefined) grant.name = account.name;
  if (account.relays !== undefined) grant.relays = account.relays;
  return grant;
}

export type GrantCheck = { ok: true; grant: Grant } | { ok: false; reason: string };

/**
 * What an app or program checks before using a grant (the Minca protocol §2.6): v is 2; the note verifies;
 * its aud is the asker's own key; its iss is grant.did; and, for one that asked for records
 * only, its command is under /record.
 */
export async function checkGrant(value: unknown, mine: { audience: string; recordsOnly: boolean }): Promise<GrantCheck> {
  const g = grantSchema.safeParse(value);
  if (!g.success) return { ok: false, reason: "the grant is malformed" };
  const note = await verifyNote(g.data.note);
  if (!note.ok) return { ok: false, reason: note.reason };
  const p = note.note.payload;
  if (p.aud !== mine.audience) return { ok: false, reason: "the note is made out to another key" };
  if (p.iss !== g.data.did) return { ok: false, reason: "the note is not from the grant's account" };
  if (mine.recordsOnly && !isRecordsOnly(p.cmd)) return { ok: false, reason: "the note grants more than records" };
  return { ok: true, grant: { ...g.data, note: note.note } as Grant };
}
