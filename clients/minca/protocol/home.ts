// The account home's side of connecting by code (the Minca protocol section 3), the offering side: an
// explicit state machine over a RoomTransport. It answers the first code:hello only, takes only
// a point that keeps its commitment, spends the code on the first ask that opens, and grants
// records only, in the whole account, to the ask's key, when the person allows it.
import { base64urlDecode, base64urlEncode } from "../../../shared/encoding";
import { channelKeys, keepsCommitment, newPoint, open, seal, type ChannelKeys, type Point } from "./channel";
import { codeRoom, codeSecret, readCode } from "../../../shared/minca/code";
import { connectionsOf, type HomeConnections } from "./connections";
import { checkCodeRequest, codeRequest, grantByCode, grantDays, type Account, type CodeRequest, type Grant } from "./grant";
import { askBodySchema, CODE_TYPES, doneBodySchema, helloSchema, MAX_SHOWN_NAME_CHARS, pointSchema, SEQ } from "./messages";
import type { JoinRoom, RoomEvent, RoomTransport } from "./transport";

export type HomeState =
  | "new"
  | "waiting" // in the room, no hello yet
  | "keyed" // answered the first hello with code:key
  | "homed" // a point that keeps the commitment: code:home sent
  | "asked" // the code is spent: code:heard sent, the person decides
  | "answered" // grant sent, waiting for code:done
  | "done"
  | "ended"; // nobody waiting, denied, closed, or no code in the link

export type HomeOutcome =
  | { status: "done"; grant: Grant }
  | { status: "granted"; grant: Grant; why: "no code:done in time" }
  | { status: "denied"; reason: string }
  | { status: "nobody_waiting" }
  | { status: "no_code" }
  | { status: "closed"; reason: string };

/** What the home shows the person: the program's name (a name only) and the check. */
export interface AskShown {
  name: string;
  did: string;
  check: string;
}

export type Decision = { allow: true; days?: number } | { allow: false; reason: string };

export type HomeEvent =
  | { kind: "state"; state: HomeState }
  | { kind: "ask"; shown: AskShown }
  | { kind: "ignored"; type: string; from: string; why: string };

export interface HomeOptions {
  /** The home's own origin, as its page's address says (never one a message names). */
  origin: string;
  /** The address the home was opened at (or text with the code in it). */
  link: string;
  account: Account;
  /** The home's own session key's did: never granted to. */
  sessionDid?: string;
  join: JoinRoom;
  /** The person's approval, given what the home shows. */
  approve: (shown: AskShown) => Promise<Decision>;
  /** Whether another connection of a different kind already holds this key (the Minca protocol §2.5), besides what `connections` holds. */
  heldElsewhere?: (did: string) => boolean;
  /**
   * The connections the home remembers (the Minca protocol §2.10): the one it grants is added, and its refusals
   * (its own session key, a key another kind of connection holds) read it. Default: one
   * in-memory store per account object (connectionsOf), so the refusals always run.
   */
  connections?: HomeConnections;
  /** How long to wait for a code:hello before saying nobody waits on the link any more. Default 30 s. */
  helloTimeoutMs?: number;
  /** How long to wait for code:done after the grant. Default 15 minutes. */
  doneTimeoutMs?: number;
  /** Makes the grant; only tests replace it (to play a home that breaks the rules). */
  makeGrant?: (account: Account, req: CodeRequest, days?: number) => Promise<Grant>;
  onEvent?: (e: HomeEvent) => void;
}

export class HomeExchange {
  state: HomeState = "new";
  readonly outcome: Promise<HomeOutcome>;
  room: string | undefined;

  private secret: Uint8Array | undefined;
  protected readonly point: Point = newPoint();
  private transport: RoomTransport | undefined;
  private program: string | undefined;
  private commit: Uint8Array | undefined;
  private keys: ChannelKeys | undefined;
  private granted: Grant | undefined;
  private chain: Promise<void> = Promise.resolve();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private resolve!: (o: HomeOutcome) => void;

  constructor(private readonly opts: HomeOptions) {
    this.outcome = new Promise((r) => (this.resolve = r));
  }

  get roomDid(): string | undefined {
    return this.transport?.did;
  }

  async start(): Promise<void> {
    const code = readCode(this.opts.link);
    if (code === null) return this.end({ status: "no_code" });
    this.secret = codeSecret(code);
    this.room = codeRoom(this.secret);
    this.transport = await this.opts.join(this.room);
    this.setState("waiting");
    this.arm(this.opts.helloTimeoutMs ?? 30_000, () => this.end({ status: "nobody_waiting" }));
    this.transport.listen((e) => {
      this.chain = this.chain.then(() => this.handle(e)).catch((err) => this.end({ status: "closed", reason: String(err) }));
    });
  }

  close(): void {
    this.end({ status: "closed", reason: "closed by the home" });
  }

  private connections(): HomeConnections {
    return this.opts.connections ?? connectionsOf(this.opts.account);
  }

  // ---- the machine ----------------------------------------------------------------------------

  private async handle(e: RoomEvent): Promise<void> {
    if (this.state === "done" || this.state === "ended") return;
    if (e.kind === "peer" || e.kind === "gone") return;
    if (e.kind === "closed") return this.end({ status: "closed", reason: `the room closed (${e.code})` });
    const ignore = (why: string) => this.opts.onEvent?.({ kind: "ignored", type: e.type, from: e.from, why });
    if (this.program !== undefined && e.from !== this.program) return ignore("not the program this exchange is with");
    switch (e.type) {
      case CODE_TYPES.hello: {
        if (this.state !== "waiting") return ignore("only the first code:hello is answered");
        const msg = helloSchema.safeParse(e.payload);
        if (!msg.success) return ignore("malformed code:hello");
        this.program = e.from;
        this.commit = base64urlDecode(msg.data.commit);
        this.send(CODE_TYPES.key, { key: base64urlEncode(this.point.point) });
        this.disarm();
        return this.setState("keyed");
      }
      case CODE_TYPES.point: {
        if (this.state !== "keyed") return ignore("not expecting code:point");
        const msg = pointSchema.safeParse(e.payload);
        if (!msg.success) return ignore("malformed code:point");
        const J = base64urlDecode(msg.data.key);
        if (!keepsCommitment(J, this.commit!)) return ignore("the point breaks its commitment");
        try {
          this.keys = channelKeys(this.secret!, this.point.secret, J, this.point.point, J);
        } catch {
          return ignore("unusable point");
        }
        this.sendSealed(CODE_TYPES.home, SEQ.home, { origin: this.opts.origin });
        return this.setState("homed");
      }
      case CODE_TYPES.ask: {
        if (this.state !== "homed") return ignore("the code is spent: no other ask is answered");
        const ask = askBodySchema.safeParse(open(this.keys!.program, e.type, SEQ.ask, e.payload));
        if (!ask.success) return ignore("code:ask does not open");
        // The code is spent from here on.
        this.setState("asked");
        this.sendSealed(CODE_TYPES.heard, SEQ.heard, {});
        const req = codeRequest(ask.data);
        const connections = this.connections();
        const own = [this.opts.sessionDid, connections.sessionDid, this.opts.account.session?.did, this.opts.account.key.did];
        const checked = own.includes(req.audience)
          ? { ok: false as const, reason: "the audience is the home's own key" }
          : await checkCodeRequest(req, {
              origin: this.opts.origin,
              heldElsewhere: (d) => connections.heldElsewhere(d, "code") || (this.opts.heldElsewhere?.(d) ?? false),
            });
        if (!checked.ok) return this.deny(checked.reason);
        const shown: AskShown = { name: ask.data.name.slice(0, MAX_SHOWN_NAME_CHARS), did: req.audience, check: this.keys!.check };
        this.opts.onEvent?.({ kind: "ask", shown });
        const decision = await this.opts.approve(shown);
        if ((this.state as HomeState) !== "asked") return; // closed while the person decided
        if (!decision.allow) return this.deny(decision.reason);
        if (grantDays(decision.days) === null) return this.deny("the lifetime chosen is not a finite positive number of days");
        const make = this.opts.makeGrant ?? ((a, r, days) => grantByCode(a, r, { days }));
        const grant = await make(this.opts.account, req, decision.days);
        this.granted = grant;
        connections.remember({ audience: req.audience, kind: "code", origin: this.opts.origin });
        this.sendSealed(CODE_TYPES.answer, SEQ.answer, { grant });
        this.setState("answered");
        this.arm(this.opts.doneTimeoutMs ?? 15 * 60_000, () => this.end({ status: "granted", grant, why: "no code:done in time" }));
        return;
      }
      case CODE_TYPES.done: {
        if (this.state !== "answered") return ignore("not expecting code:done");
        if (!doneBodySchema.safeParse(open(this.keys!.program, e.type, SEQ.done, e.payload)).success) {
          return ignore("code:done does not open");
        }
        this.disarm();
        this.setState("done");
        return this.settle({ status: "done", grant: this.granted! });
      }
      default:
        return ignore("not a message the home takes");
    }
  }

  private deny(reason: string): void {
    this.sendSealed(CODE_TYPES.answer, SEQ.answer, { denied: reason });
    this.end({ status: "denied", reason });
  }

  private send(type: string, payload: unknown): void {
    this.transport!.send({ type, to: this.program, payload });
  }

  private sendSealed(type: string, seq: number, body: unknown): void {
    this.send(type, seal(this.keys!.home, type, seq, body));
  }

  private arm(ms: number, then: () => void): void {
    this.disarm();
    this.timer = setTimeout(then, ms);
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
  }

  private end(o: HomeOutcome): void {
    if (this.state === "done" || this.state === "ended") return;
    this.setState("ended");
    this.settle(o);
  }

  private settle(o: HomeOutcome): void {
    this.disarm();
    this.resolve(o);
    this.transport?.close();
  }

  private setState(s: HomeState): void {
    this.state = s;
    this.opts.onEvent?.({ kind: "state", state: s });
  }
}
