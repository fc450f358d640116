// One account's connection to a Minca host (the Minca protocol §4.2-4.3, docs/hosting.md):
// connecting it (the carry space derived from the account key, the host's did and gen, the
// account's revokes copied first), passes, links, wakes, receivers, revokes and carry:closed, and
// fetching a space's log, with a read proof for a private space. The account and its versions are
// account.ts; signing out, sign-out.ts; moving hosts, move.ts. Runs wherever fetch does.
import { base64urlEncode } from "../../shared/encoding";
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
import { encodeInvite } from "../../shared/minca/invite";
import { readProofHeaders } from "../../shared/minca/read-proof";
import { carrySpace, readSeedOf, type Space } from "../../shared/minca/space";
import type { Version } from "../../shared/minca/version";
import { relayBase } from "../relay-url";
import { carryStateOf, mergeRevokes, revokeHeld, type CarryState } from "./carry-state";
import { signOutEverywhere, type SignOutResult } from "./sign-out";
import { HostError, type VersionResult } from "./host-error";
import { writeVersion, type MincaAccount } from "./account";

export {
  makeSpace,
  newAccount,
  renewSession,
  SESSION_RENEW_BEFORE_SECONDS,
  SESSION_TTL_SECONDS,
  sessionNote,
  withNote,
  writeVersion,
  type MincaAccount,
  type WriteInput,
} from "./account";

/** Times a request answered 429 is sent again, after the Retry-After it names. */
const RATE_RETRIES = 5;

/** A pass refused for one of these reasons means the host does not carry the space for the account. */
const NOT_CARRIED = ["too_many_carriers", "too_many_spaces"];

export interface HostInfo {
  did: string;
  name: string;
}

export { HostError, type VersionResult } from "./host-error";

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

  private readonly rateRetries: number;

  constructor(
    readonly account: MincaAccount,
    relayUrl: string,
    opts: {
      fetch?: typeof fetch;
      /** How often a request answered 429 is sent again after its Retry-After (default 5; 0: never, the 429 is thrown at once). */
      rateRetries?: number;
    } = {},
  ) {
    this.base = relayBase(relayUrl, "http");
    this.fetchFn = opts.fetch ?? ((input, init) => fetch(input, init));
    this.rateRetries = opts.rateRetries ?? RATE_RETRIES;
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
   * host's operator handed out, as `Authorization: Bearer`), then, before anything else is written
   * there, copies into the carry space the account's revokes it lacks (the relay's hosting
   * profile: a carrier added later learns them). The revokes known are this device's, those its
   * carry space at this host already holds, and those read at the hosts in `learnFrom` (the
   * account's other carriers); one the carry space holds is never written again.
   */
  async connect(
    gen = 0,
    name?: string,
    opts: { admission?: string; learnFrom?: HostConnection[] } = {},
  ): Promise<{ account: string; carry_space: string }> {
    for (const other of opts.learnFrom ?? []) await other.learnRevokes();
    const grant = await this.grant(gen, name);
    const headers: Record<string, string> = opts.admission !== undefined ? { authorization: `Bearer ${opts.admission}` } : {};
    const started = await this.json<{ account: string; carry_space: string }>("POST", "/minca/v1/host/accounts", grant, 201, headers);
    const held = await this.learnRevokes();
    const lacking = (this.account.revoked ?? []).filter((r) => !revokeHeld(held, r));
    for (let i = 0; i < lacking.length; i += MINCA_HOST_LIMITS.max_versions_per_request) {
      const batch = await Promise.all(lacking.slice(i, i + MINCA_HOST_LIMITS.max_versions_per_request).map((r) => this.revokeVersion(r)));
      const refused = (await this.post(this.carrySpace().id, batch)).find((r) => !r.accepted);
      if (refused && !refused.accepted) throw new HostError(200, refused.reason, "the host refused a copy of the account's revoke");
    }
    return started;
  }

  /** Reads the carry space at this host back (its records, revokes and passes). */
  async readCarry(): Promise<CarryState> {
    const carry = this.carrySpace();
    return carryStateOf(await this.readLog(carry.id, readSeedOf(carry.key!)), carry.key!);
  }

  /**
   * Learns the account's revokes from the carry space at this host (every sys.revoke record, not
   * only this device's): they join the account's known revokes. Answers the ones the carry space holds.
   */
  async learnRevokes(): Promise<RevokeBody[]> {
    const held = (await this.readCarry()).revokes;
    this.account.revoked = mergeRevokes(this.account.revoked ?? [], held);
    return held;
  }

  /** Derives the carry space for carry space `gen` at this host without posting a grant (a host already connected). */
  async attach(gen = 0): Promise<Space> {
    await this.grant(gen);
    return this.carrySpace();
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
    if (result.accepted) this.account.revoked = mergeRevokes(this.account.revoked ?? [], [body]);
    return result;
  }

  /**
   * Signing out at this host (the Minca protocol §1.2; signOutEverywhere for several hosts): revokes
   * this session's key with a cutoff at the latest `at` it wrote (remembered, or read back from
   * the host), in every space it writes in, then in the carry space, and forgets the key.
   */
  signOut(opts: { spaces?: Space[] } = {}): Promise<SignOutResult<HostConnection>> {
    return signOutEverywhere([this], opts);
  }

  /** A revoke of `body.key` in the carry space, not yet posted. */
  revokeVersion(body: RevokeBody): Promise<Version> {
    return writeVersion(this.account, this.carrySpace(), { collection: REVOKE, key: revokeKey(body.key), body });
  }

  /**
   * Removing the host (the Minca protocol §4.2): the passes are deleted first, then carry:closed
   * is written. The host forgets everything it held for the account.
   */
  async close(): Promise<VersionResult> {
    const state = await this.readCarry();
    const deletions = await Promise.all(
      state.passes.map((p) => writeVersion(this.account, this.carrySpace(), { collection: PASS, key: passKey(p.id), deleted: true })),
    );
    for (let i = 0; i < deletions.length; i += MINCA_HOST_LIMITS.max_versions_per_request) {
      const refused = (await this.post(this.carrySpace().id, deletions.slice(i, i + MINCA_HOST_LIMITS.max_versions_per_request))).find(
        (r) => !r.accepted,
      );
      if (refused && !refused.accepted) return refused;
    }
    const v = await writeVersion(this.account, this.carrySpace(), { collection: PASS, key: CLOSED_KEY, body: { v: 1, closed: true } });
    return (await this.post(this.carrySpace().id, [v]))[0];
  }

  /** Posts versions to a carried space; one result per version, in order. */
  async post(space: string, versions: unknown[]): Promise<VersionResult[]> {
    return (await this.json<{ results: VersionResult[] }>("POST", `/minca/v1/spaces/${space}/versions`, versions)).results;
  }

  /** A page of a space's log; a private space's with a read proof. */
  fetchLog(space: Space, q: { after?: number; limit?: number; wait?: number } = {}): Promise<LogPage> {
    return this.fetchLogOf(space.id, space.key ? readSeedOf(space.key) : undefined, q);
  }

  /** A page of the log of space `id`; with `readSeed` (a private space's, as its pass carries it), a read proof. */
  fetchLogOf(id: string, readSeed: Uint8Array | undefined, q: { after?: number; limit?: number; wait?: number } = {}): Promise<LogPage> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) if (v !== undefined) params.set(k, String(v));
    const headers = readSeed ? readProofHeaders(readSeed, id) : {};
    return this.json("GET", `/minca/v1/spaces/${id}/versions?${params}`, undefined, 200, headers);
  }

  /** The whole log of space `id`, page after page, in seq order. */
  async readLog(id: string, readSeed?: Uint8Array): Promise<Version[]> {
    const out: Version[] = [];
    for (let after = 0; ; ) {
      const page = await this.fetchLogOf(id, readSeed, { after });
      out.push(...page.items.map((i) => i.version));
      if (!page.more || page.items.length === 0) return out;
      after = page.next;
    }
  }

  private async json<T>(method: string, path: string, body?: unknown, expect = 200, headers: Record<string, string> = {}): Promise<T> {
    let res: Response;
    for (let attempt = 0; ; attempt++) {
      res = await this.fetchFn(`${this.base}${path}`, {
        method,
        headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      // A host's per-client rate (a move posts many versions): wait as it says, a few times.
      if (res.status !== 429 || attempt >= this.rateRetries) break;
      await res.body?.cancel();
      await new Promise((r) => setTimeout(r, Math.min(30, Number(res.headers.get("retry-after")) || 1) * 1000));
    }
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
