// Minca code-exchange helpers: an account, a program and a home wired to one room transport, a
// person who reads the check at the home and types it into the program, and transport wrappers
// that record or tamper with what a relay delivers.
import type { ProgramEvent, ProgramOptions } from "../../clients/minca/protocol/program";
import type { AskShown, Decision, HomeEvent, HomeOptions } from "../../clients/minca/protocol/home";
import { TestHomeExchange, TestProgramExchange } from "./minca-exchanges";
import { newP256Key } from "../../shared/minca/es256";
import type { Account } from "../../clients/minca/protocol/grant";
import type { JoinRoom, RoomEvent, RoomTransport } from "../../clients/minca/protocol/transport";

export const HOME = "https://home.example";

export async function newAccount(name = "Leif"): Promise<Account> {
  return { key: await newP256Key(), name };
}

/** Wraps a transport so that every message event this side receives passes through `f` first. */
export function tampered(join: JoinRoom, f: (e: Extract<RoomEvent, { kind: "message" }>) => RoomEvent[]): JoinRoom {
  return async (room) => {
    const t = await join(room);
    const wrapped: RoomTransport = {
      did: t.did,
      peers: t.peers,
      send: (m) => t.send(m),
      close: () => t.close(),
      listen: (l) => t.listen((e) => (e.kind === "message" ? f(e).forEach(l) : l(e))),
    };
    return wrapped;
  };
}

/** Wraps a transport so that every message this side receives is also pushed to `into`. */
export function recorded(join: JoinRoom, into: Array<Extract<RoomEvent, { kind: "message" }>>): JoinRoom {
  return tampered(join, (e) => {
    into.push(structuredClone(e));
    return [e];
  });
}

export interface PairOptions {
  program?: Partial<ProgramOptions>;
  home?: Partial<HomeOptions>;
  /** The person's answer at the home (default: allow). */
  decide?: (shown: AskShown) => Decision;
  /** Whether the person types the check the home shows into the program (default true). */
  typesCheck?: boolean;
  programJoin?: JoinRoom;
  homeJoin?: JoinRoom;
}

/** A program and the account home it opens, meeting on `join`'s rooms; both started. */
export async function programAndHome(join: JoinRoom, opts: PairOptions = {}) {
  const account = await newAccount();
  const programEvents: ProgramEvent[] = [];
  const homeEvents: HomeEvent[] = [];
  const program = new TestProgramExchange({
    home: HOME,
    name: "a terminal",
    join: opts.programJoin ?? join,
    timeoutMs: 8_000,
    onEvent: (e) => void programEvents.push(e),
    ...opts.program,
  });
  await program.start();
  const shown: AskShown[] = [];
  const home = new TestHomeExchange({
    origin: HOME,
    link: program.link,
    account,
    join: opts.homeJoin ?? join,
    helloTimeoutMs: 5_000,
    doneTimeoutMs: 5_000,
    onEvent: (e) => void homeEvents.push(e),
    approve: async (s) => {
      shown.push(s);
      // The person reads the check at the home and gives it to the program.
      if (opts.typesCheck ?? true) program.enterCheck(s.check);
      return opts.decide?.(s) ?? { allow: true, days: 1 };
    },
    ...opts.home,
  });
  await home.start();
  return { account, program, home, shown, programEvents, homeEvents };
}

export function ignored(events: Array<ProgramEvent | HomeEvent>): string[] {
  return events.flatMap((e) => (e.kind === "ignored" ? [`${e.type}: ${e.why}`] : []));
}

export function states(events: Array<ProgramEvent | HomeEvent>): string[] {
  return events.flatMap((e) => (e.kind === "state" ? [e.state] : []));
}
