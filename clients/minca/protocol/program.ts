// The program's side of connecting by code (the Minca protocol section 3), the joining side: an explicit
// state machine over a RoomTransport. It makes the code, commits to its point before it sees any
// code:key, sends its point to the first peer whose key it takes, asks only the home it opened,
// checks the grant as an app does, and keeps nothing until the person gives it the matching
// check.
import { base64urlDecode, base64urlEncode } from "../../../shared/encoding";
import { channelKeys, commitment, newPoint, open, seal, type ChannelKeys, type Point } from "./channel";
import { codeLink, codeRoom, codeSecret, connectPage, homeOrigin, newCode } from "../../../shared/minca/code";
import { newP256Key, type P256Key } from "../../../shared/minca/es256";
import { checkGrant, type Grant } from "./grant";
import { signKeyProof } from "./key-proof";
import { answerBodySchema, CODE_TYPES, heardBodySchema, homeBodySchema, keySchema, SEQ } from "./messages";
import type { JoinRoom, RoomEvent, RoomTransport } from "./transport";

export type ProgramState =
  | "new" // not joined yet
  | "waiting" // in the room, hello sent to every peer, no code:key taken
  | "keyed" // point sent to the peer whose key it took
  | "asked" // code:home opened with the right origin, code:ask sent
  | "heard" // code:heard opened: that peer is the home; the person can give the check
  | "answered" // a grant that passes the checks, held until the check matches
  | "done" // check matched, code:done sent, grant kept
  | "failed";

export type ProgramOutcome =
  | { ok: true; grant: Grant; key: P256Key }
  | { ok: false; reason: "denied" | "refused" | "check_mismatch" | "timeout" | "closed"; message: string };

export type ProgramEvent = { kind: "state"; state: ProgramState } | { kind: "ignored"; type: string; from: string; why: string };

export interface ProgramOptions {
  /** The home it opens: a bare domain, an origin or its connect page. */
  home: string;
  /** The name the home shows the person (a name only). */
  name: string;
  join: JoinRoom;
  /** The key the grant is made out to; by default a new extractable one (the program keeps it). */
  key?: P256Key;
  /** Default: a new code (fresh CSPRNG bytes). */
  code?: string;
  /** Gives up after this long without an answer. Default 15 minutes (the room's own life). */
  timeoutMs?: number;
  /** Checks the person may get wrong before the program gives up. Default 3. */
  checkAttempts?: number;
  onEvent?: (e: ProgramEvent) => void;
}

export class ProgramExchange {
  readonly code: string;
  readonly link: string;
  readonly room: string;
  readonly homeOrigin: string;
  state: ProgramState = "new";
  readonly outcome: Promise<ProgramOutcome>;

  private readonly secret: Uint8Array;
  protected readonly point: Point = newPoint();
  private key: P256Key | undefined;
  private transport: RoomTransport | undefined;
  private helloed = new Set<string>();
  private homePeer: string | undefined;
  protected keys: ChannelKeys | undefined;
  private held: Grant | undefined;
  private confirmed = false;
  private attempts = 0;
  private chain: Promise<void> = Promise.resolve();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private resolve!: (o: ProgramOutcome) => void;

  constructor(private readonly opts: ProgramOptions) {
    this.code = opts.code ?? newCode();
    this.secret = codeSecret(this.code);
    this.room = codeRoom(this.secret);
    this.link = codeLink(opts.home, this.code);
    this.homeOrigin = homeOrigin(opts.home);
    this.key = opts.key;
    this.outcome = new Promise((r) => (this.resolve = r));
  }

  get roomDid(): string | undefined {
    return this.transport?.did;
  }

  /** Joins the room and says hello to whoever is there. */
  async start(): Promise<void> {
    this.key ??= await newP256Key(true);
    this.transport = await this.opts.join(this.room);
    this.setState("waiting");
    this.timer = setTimeout(() => this.fail("timeout", "no answer in time"), this.opts.timeoutMs ?? 15 * 60_000);
    for (const did of this.transport.peers) this.hello(did);
    this.transport.listen((e) => {
      this.chain = this.chain.then(() => this.handle(e)).catch((err) => this.fail("closed", String(err)));
    });
  }

  /**
   * The check the person typed. True when it matches; the grant is kept (and code:done sent) as
   * soon as both the match and a checked grant are there.
   */
  enterCheck(typed: string): boolean {
    if (this.state === "done" || this.state === "failed" || !this.keys) return false;
    if (typed.trim() !== this.keys.check) {
      if (++this.attempts >= (this.opts.checkAttempts ?? 3)) {
        this.fail("check_mismatch", "the check given is not this exchange's");
      }
      return false;
    }
    this.confirmed = true;
    this.chain = this.chain.then(() => this.finish());
    return true;
  }

  close(): void {
    this.fail("closed", "closed by the program");
  }

  // ---- the machine ----------------------------------------------------------------------------

  private async handle(e: RoomEvent): Promise<void> {
    if (this.state === "done" || this.state === "failed") return;
    if (e.kind === "peer") return this.hello(e.did);
    if (e.kind === "gone") return;
    if (e.kind === "closed") {
      // A checked grant waits for the person's check even once the room is gone (it expires
      // after 15 minutes); only code:done, a courtesy to the home, can no longer be sent.
      if (this.state === "answered") return;
      return this.fail("closed", `the room closed (${e.code})`);
    }
    const ignore = (why: string) => this.opts.onEvent?.({ kind: "ignored", type: e.type, from: e.from, why });
    if (this.homePeer !== undefined && e.from !== this.homePeer) return ignore("not the peer this exchange is with");
    switch (e.type) {
      case CODE_TYPES.key: {
        if (this.state !== "waiting") return ignore("a code:key was already taken");
        if (!this.helloed.has(e.from)) return ignore("no hello was sent to that peer");
        const msg = keySchema.safeParse(e.payload);
        if (!msg.success) return ignore("malformed code:key");
        const O = base64urlDecode(msg.data.key);
        let keys: ChannelKeys;
        try {
          keys = channelKeys(this.secret, this.point.secret, O, O, this.point.point);
        } catch {
          return ignore("unusable point");
        }
        this.keys = keys;
        this.homePeer = e.from;
        this.send(CODE_TYPES.point, { key: base64urlEncode(this.point.point) });
        return this.setState("keyed");
      }
      case CODE_TYPES.home: {
        if (this.state !== "keyed") return ignore("not expecting code:home");
        const body = homeBodySchema.safeParse(open(this.keys!.home, e.type, SEQ.home, e.payload));
        if (!body.success) return ignore("code:home does not open");
        if (body.data.origin !== this.homeOrigin) return ignore("code:home names another origin than the home opened");
        const proof = await signKeyProof(this.key!, { via: "code", recordsOnly: true, origin: this.homeOrigin });
        this.sendSealed(CODE_TYPES.ask, SEQ.ask, this.keys!.program, { did: this.key!.did, proof, name: this.opts.name });
        return this.setState("asked");
      }
      case CODE_TYPES.heard: {
        if (this.state !== "asked") return ignore("not expecting code:heard");
        if (!heardBodySchema.safeParse(open(this.keys!.home, e.type, SEQ.heard, e.payload)).success) {
          return ignore("code:heard does not open");
        }
        return this.setState("heard");
      }
      case CODE_TYPES.answer: {
        if (this.state !== "heard") return ignore("not expecting code:answer");
        const body = answerBodySchema.safeParse(open(this.keys!.home, e.type, SEQ.answer, e.payload));
        if (!body.success) return ignore("code:answer does not open");
        if ("denied" in body.data) return this.fail("denied", body.data.denied);
        const checked = await checkGrant(body.data.grant, { audience: this.key!.did, recordsOnly: true });
        if (!checked.ok) return this.fail("refused", checked.reason);
        this.held = checked.grant;
        if (this.timer !== undefined) clearTimeout(this.timer); // the person may take their time to type the check
        this.setState("answered");
        return this.finish();
      }
      default:
        return ignore("not a message the program takes");
    }
  }

  private hello(did: string): void {
    if (this.state !== "waiting" || this.helloed.has(did)) return;
    this.helloed.add(did);
    this.transport!.send({ type: CODE_TYPES.hello, to: did, payload: { commit: base64urlEncode(commitment(this.point.point)) } });
  }

  /** Keeps the grant once both the check and the grant are there. */
  private async finish(): Promise<void> {
    if (this.state !== "answered" || !this.confirmed || !this.held) return;
    this.sendSealed(CODE_TYPES.done, SEQ.done, this.keys!.program, {});
    // The home it opened, never the one the answer names.
    const grant: Grant = { ...this.held, home: connectPage(this.opts.home) };
    this.setState("done");
    this.settle({ ok: true, grant, key: this.key! });
  }

  private send(type: string, payload: unknown): void {
    this.transport!.send({ type, to: this.homePeer, payload });
  }

  private sendSealed(type: string, seq: number, key: Uint8Array, body: unknown): void {
    this.send(type, seal(key, type, seq, body));
  }

  private fail(reason: Extract<ProgramOutcome, { ok: false }>["reason"], message: string): void {
    if (this.state === "done" || this.state === "failed") return;
    this.held = undefined;
    this.setState("failed");
    this.settle({ ok: false, reason, message });
  }

  private settle(o: ProgramOutcome): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.resolve(o);
    this.transport?.close();
  }

  private setState(s: ProgramState): void {
    this.state = s;
    this.opts.onEvent?.({ kind: "state", state: s });
  }
}
