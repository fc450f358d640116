// What an account's device needs to use a Minca host (the Minca protocol §4.2-4.3, docs/hosting.md):
// an account (its root P-256 key and 32-byte account key) writing through a session key under
// one note; making spaces; writing and sealing versions; connecting a host (the carry space
// derived from the account key, the host's did and gen); passes, links and carry:closed; and
// fetching a space's log, with a read proof for a private space. Runs wherever fetch does.
import { base64urlEncode, randomBytes } from "../../shared/encoding";
import {
  carryGrant,
  CLOSED_KEY,
  LINK,
  PASS,
  passBody,
  passKey,
  RECEIVER,
  receiverKey,
  REVOKE,
  revokeKey,
  WAKE,
  type CarryGrant,
  type RevokeBody,
  type WakeBody,
} from "../../shared/minca/carry";
import { MINCA_HOST_LIMITS } from "../../shared/limits";
import { newP256Key, type P256Key } from "../../shared/minca/es256";
import { encodeInvite } from "../../shared/minca/invite";
import { noteNonce, signNote, type Note } from "../../shared/minca/note";
import { readProofHeaders } from "../../shared/minca/read-proof";
import { bodyKeyOf, carrySpace, newSpace, readSeedOf, type Space } from "../../shared/minca/space";
import { buildVersion, type Version } from "../../shared/minca/version";
import { relayBase } from "../relay-url";

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
  /** The latest `at` this session signed: its sign-out's cutoff ("a cutoff at what it wrote", §1.2). */
  wroteUntil?: number;
}

/** A new account with a session under a note granting `cmd` (default "/": everything). */
export async function newAccount(cmd = "/"): Promise<MincaAccount> {
  const root = await newP256Key();
  const session = await newP256Key();
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
  return { ...account, session, note: await sessionNote(account.root, session.did, cmd), wroteUntil: undefined };
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
  await renewSession(account);
  const v = await buildVersion({
    space: space.id,
    author: account.session,
    note: account.note,
    bodyKey: space.key ? bodyKeyOf(space.key) : undefined,
    ...w,
  });
  account.wroteUntil = Math.max(account.wroteUntil ?? 0, v.at);
  return v;
}

/** A pass refused for one of these reasons means the host does not carry the space for the account. */
const NOT_CARRIED = ["too_many_carriers", "too_many_spaces"];

export interface HostInfo {
  did: string;
  name: string;
}

export class HostError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export type VersionResult = { id: string; accepted: true; seq: number } | { id?: string; accepted: false; reason: string };

export interface LogPage {
  items: Array<{ seq: number; version: Version }>;
  next: number;
  more: boolean;
  oldest_seq: number | null;
}

/** One account's connection to one host. */
export class HostConnection {
  private readonly base: string;
  private readonly fetchFn: typeof fetch;
  carry: Space | undefined;

  constructor(
    readonly account: MincaAccount,
    relayUrl: string,
    opts: { fetch?: typeof fetch } = {},
  ) {
    this.base = relayBase(relayUrl, "http");
    this.fetchFn = opts.fetch ?? ((input, init) => fetch(input, init));
  }

  /** The host's did and name, from the information document. */
  async info(): Promise<HostInfo> {
    const res = await this.fetchFn(`${this.base}/`, { headers: { accept: "application/json" } });
    const doc = (await res.json()) as { protocols?: { minca?: { host?: HostInfo } } };
    const host = doc.protocols?.minca?.host;
    if (!host?.did) throw new HostError(res.status, "not_a_host", "the relay does not host Minca accounts");
    return host;
  }

  /** The CarryGrant a home would answer this host with (the Minca protocol §4.3), for carry space `gen`. */
  async grant(gen = 0, name?: string): Promise<CarryGrant> {
    const host = await this.info();
    this.carry = carrySpace(this.account.accountKey, this.account.root.did, host.did, gen);
    return carryGrant({ account: this.account.root.did, name, carrySpace: this.carry, invite: encodeInvite(this.carry) });
  }

  /**
   * Connects the host: derives the carry space, posts the grant (with `admission`, the token the
   * host's operator handed out, as `Authorization: Bearer`), then copies the account's known
   * revokes into the carry space before anything else is written there (the relay's hosting
   * profile: a carrier added later learns them).
   */
  async connect(gen = 0, name?: string, opts: { admission?: string } = {}): Promise<{ account: string; carry_space: string }> {
    const grant = await this.grant(gen, name);
    const headers: Record<string, string> = opts.admission !== undefined ? { authorization: `Bearer ${opts.admission}` } : {};
    const started = await this.json<{ account: string; carry_space: string }>("POST", "/minca/v1/host/accounts", grant, 201, headers);
    const known = this.account.revoked ?? [];
    for (let i = 0; i < known.length; i += MINCA_HOST_LIMITS.max_versions_per_request) {
      const batch = await Promise.all(known.slice(i, i + MINCA_HOST_LIMITS.max_versions_per_request).map((r) => this.revokeVersion(r)));
      const refused = (await this.post(this.carrySpace().id, batch)).find((r) => !r.accepted);
      if (refused && !refused.accepted) throw new HostError(200, refused.reason, "the host refused a copy of the account's revoke");
    }
    return started;
  }

  /**
   * What the host holds for the account (410 once it read carry:closed), asked with a proof by
   * the carry space's read key (docs/hosting.md): the host answers no one else.
   */
  status(): Promise<Record<string, unknown>> {
    const carry = this.carrySpace();
    return this.json(
      "GET",
      `/minca/v1/host/accounts/${encodeURIComponent(this.account.root.did)}`,
      undefined,
      200,
      readProofHeaders(readSeedOf(carry.key!), carry.id),
    );
  }

  private carrySpace(): Space {
    if (!this.carry) throw new Error("connect first");
    return this.carry;
  }

  /**
   * Writes the pass of a space (its constitution and, for a private space, its read seed). With
   * `own`, the space is one of the account's own (its registry or contacts space, founded by the
   * account alone): the host then takes versions there only under a note granting /account/write.
   * Throws HostError `not_carried` when the host refuses the pass a slot (too_many_carriers,
   * too_many_spaces): it does not carry the space for this account.
   */
  async pass(space: Space, readKey?: string, opts: { own?: boolean } = {}): Promise<VersionResult> {
    const v = await writeVersion(this.account, this.carrySpace(), {
      collection: PASS,
      key: passKey(space.id),
      body: passBody(space, readKey, opts.own),
    });
    const result = (await this.post(this.carrySpace().id, [v]))[0];
    // Only an account with a live pass keeps a log alive here: a refused slot is never a silent success.
    if (!result.accepted && NOT_CARRIED.includes(result.reason))
      throw new HostError(
        200,
        "not_carried",
        `this host does not carry the space ${space.id} for this account (${result.reason}): keep it at another carrier`,
      );
    return result;
  }

  /** Deletes the pass of a space: the host stops carrying it for this account. */
  async unpass(space: Space): Promise<VersionResult> {
    const v = await writeVersion(this.account, this.carrySpace(), { collection: PASS, key: passKey(space.id), deleted: true });
    return (await this.post(this.carrySpace().id, [v]))[0];
  }

  /** A link (the Minca protocol §4.2): the host answers a mailbox fetch of the blob's topic with it until `until`. */
  async link(key: string, blob: Uint8Array, until: number): Promise<VersionResult> {
    const v = await writeVersion(this.account, this.carrySpace(), {
      collection: LINK,
      key,
      body: { v: 1, blob: base64urlEncode(blob), until },
    });
    return (await this.post(this.carrySpace().id, [v]))[0];
  }

  async wake(key: string, wake: WakeBody): Promise<VersionResult> {
    const v = await writeVersion(this.account, this.carrySpace(), { collection: WAKE, key, body: wake });
    return (await this.post(this.carrySpace().id, [v]))[0];
  }

  async receiver(device: string, push: { endpoint: string; keys: { p256dh: string; auth: string } }): Promise<VersionResult> {
    const v = await writeVersion(this.account, this.carrySpace(), {
      collection: RECEIVER,
      key: receiverKey(push.endpoint),
      body: { v: 1, device, push },
    });
    return (await this.post(this.carrySpace().id, [v]))[0];
  }

  /**
   * Revokes a session key (the Minca protocol §2.10): from the moment the host stores it, nothing
   * that key signs counts for the account here, in any space the host carries for it; what it
   * wrote before keeps counting, or with `cutoff` (unix ms) only what it wrote at or before the
   * cutoff. A key may revoke itself (signing out). The revoke joins the account's known revokes.
   */
  async revoke(did: string, opts: { cutoff?: number } = {}): Promise<VersionResult> {
    const body: RevokeBody = { v: 1, key: did, ...(opts.cutoff !== undefined ? { cutoff: opts.cutoff } : {}) };
    const result = (await this.post(this.carrySpace().id, [await this.revokeVersion(body)]))[0];
    if (result.accepted) {
      this.account.revoked ??= [];
      this.account.revoked.push(body);
    }
    return result;
  }

  /**
   * Signing out (the Minca protocol §1.2): revokes this session's key with a cutoff at what it
   * wrote, so everything it wrote keeps counting and nothing it might sign later does. The
   * device then forgets the key (the caller drops this account object).
   */
  signOut(): Promise<VersionResult> {
    return this.revoke(this.account.session.did, { cutoff: this.account.wroteUntil ?? 0 });
  }

  private revokeVersion(body: RevokeBody): Promise<Version> {
    return writeVersion(this.account, this.carrySpace(), { collection: REVOKE, key: revokeKey(body.key), body });
  }

  /** Removing the host (the Minca protocol §4.2): carry:closed. The host forgets everything it held for the account. */
  async close(): Promise<VersionResult> {
    const v = await writeVersion(this.account, this.carrySpace(), { collection: PASS, key: CLOSED_KEY, body: { v: 1, closed: true } });
    return (await this.post(this.carrySpace().id, [v]))[0];
  }

  /** Posts versions to a carried space; one result per version, in order. */
  async post(space: string, versions: unknown[]): Promise<VersionResult[]> {
    return (await this.json<{ results: VersionResult[] }>("POST", `/minca/v1/spaces/${space}/versions`, versions)).results;
  }

  /** A page of a space's log; a private space's with a read proof. */
  fetchLog(space: Space, q: { after?: number; limit?: number; wait?: number } = {}): Promise<LogPage> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v !== undefined) params.set(k, String(v));
    const headers = space.key ? readProofHeaders(readSeedOf(space.key), space.id) : {};
    return this.json("GET", `/minca/v1/spaces/${space.id}/versions?${params}`, undefined, 200, headers);
  }

  private async json<T>(method: string, path: string, body?: unknown, expect = 200, headers: Record<string, string> = {}): Promise<T> {
    const res = await this.fetchFn(`${this.base}${path}`, {
      method,
      headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status !== expect) {
      let code = "http_error";
      let message = text.slice(0, 200);
      try {
        const e = JSON.parse(text) as { error?: { code: string; message: string } };
        if (e.error) ({ code, message } = e.error);
      } catch {
        // not JSON
      }
      throw new HostError(res.status, code, message);
    }
    return JSON.parse(text) as T;
  }
}
