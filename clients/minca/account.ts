// An account's device as the Minca SDK holds it (the Minca protocol §1.2): the account's root
// P-256 key and 32-byte account key, the session key that signs under one note from the root, the
// revokes the device knows, what the session wrote (its sign-out's cutoff, and the spaces it
// writes in); making spaces and writing, sealing and signing versions.
import { randomBytes } from "../../shared/encoding";
import type { RevokeBody } from "../../shared/minca/carry";
import { newP256Key, type P256Key } from "../../shared/minca/es256";
import { noteNonce, signNote, type Note } from "../../shared/minca/note";
import { bodyKeyOf, newSpace, type Space } from "../../shared/minca/space";
import { buildVersion, type Version } from "../../shared/minca/version";

export interface MincaAccount {
  /** The account's root key: its did is the account. */
  root: P256Key;
  /** The account key (32 bytes): carry spaces are derived from it. */
  accountKey: Uint8Array;
  /** The session key that signs versions, and the note the root gave it. */
  session: P256Key;
  note: Note;
  /**
   * The account's revokes this device knows (the Minca protocol §2.10): the SDK copies them into
   * every carry space it connects, before anything else, so a carrier added later learns them.
   * Shared by the account's sessions (withNote keeps the same list).
   */
  revoked?: RevokeBody[];
  /**
   * The latest `at` this session signed: its sign-out's cutoff ("a cutoff at what it wrote", §1.2).
   * Keep it with the account (accountToJson does): a device that does not remember it reads it
   * back from its hosts when it signs out.
   */
  wroteUntil?: number;
  /** The spaces this session wrote in (in this process): signing out writes its revoke in each. */
  writesIn?: Record<string, Space>;
  /** Set once the session signed out: the key is forgotten and signs nothing more. */
  signedOut?: true;
}

/** A new account with a session under a note granting `cmd` (default "/": everything); `extractable` keys can be saved (accountToJson). */
export async function newAccount(cmd = "/", opts: { extractable?: boolean } = {}): Promise<MincaAccount> {
  const root = await newP256Key(opts.extractable);
  const session = await newP256Key(opts.extractable);
  return { root, accountKey: randomBytes(32), session, note: await sessionNote(root, session.did, cmd), revoked: [] };
}

/** How long a session note lives (the Minca protocol §1.2: "exp": now + ttl; one root signature an hour). */
export const SESSION_TTL_SECONDS = 3_600;
/** A session note is renewed when less than this is left of it (the Minca protocol §1.2: before it runs out). */
export const SESSION_RENEW_BEFORE_SECONDS = 600;

/** A note from the account's root to a session key, on the whole account (the Minca protocol §1.2), for SESSION_TTL_SECONDS. */
export async function sessionNote(
  root: P256Key,
  audience: string,
  cmd = "/",
  sub = root.did,
  pol: unknown[] = [],
  now = Math.floor(Date.now() / 1000),
): Promise<Note> {
  return signNote(root, { iss: root.did, aud: audience, sub, cmd, pol, exp: now + SESSION_TTL_SECONDS, nonce: noteNonce() });
}

/**
 * Renews the account's session note when it runs out within SESSION_RENEW_BEFORE_SECONDS (seed
 * §1.2): a new note from the root to the same session key, with the same terms. True when renewed.
 * (Records are judged with no time, so a version under a note since expired still stands; a live
 * check is what the renewal is for.)
 */
export async function renewSession(account: MincaAccount, now = Math.floor(Date.now() / 1000)): Promise<boolean> {
  const p = account.note.payload;
  if (p.exp !== null && p.exp - now > SESSION_RENEW_BEFORE_SECONDS) return false;
  account.note = await sessionNote(account.root, account.session.did, p.cmd, p.sub, p.pol, now);
  return true;
}

/** A session under another note of the same account (a records-only app, say). */
export async function withNote(account: MincaAccount, cmd: string): Promise<MincaAccount> {
  const session = await newP256Key();
  account.revoked ??= [];
  return {
    ...account,
    session,
    note: await sessionNote(account.root, session.did, cmd),
    wroteUntil: undefined,
    writesIn: undefined,
    signedOut: undefined,
  };
}

export function makeSpace(account: MincaAccount, visibility: "private" | "public", founders = [account.root.did]): Space {
  return newSpace({ founders, visibility });
}

export interface WriteInput {
  collection: string;
  key: string;
  body?: Record<string, unknown>;
  topics?: string[];
  deleted?: boolean;
  at?: number;
}

/** A signed version of a record in `space` (sealed when the space is private), under a current session note. */
export async function writeVersion(account: MincaAccount, space: Space, w: WriteInput): Promise<Version> {
  if (account.signedOut) throw new Error("this session signed out: its key is forgotten");
  await renewSession(account);
  const v = await buildVersion({
    space: space.id,
    author: account.session,
    note: account.note,
    bodyKey: space.key ? bodyKeyOf(space.key) : undefined,
    ...w,
  });
  account.wroteUntil = Math.max(account.wroteUntil ?? 0, v.at);
  if (!space.constitution.nonce.startsWith("carry:")) {
    account.writesIn ??= {};
    account.writesIn[space.id] = space;
  }
  return v;
}
