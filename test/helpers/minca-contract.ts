// One suite every code-room transport runs (the relay's rooms end to end, the in-memory bus in
// unit tests): the room's own contract, then the Minca protocol section 3's list for connecting by code.
import { describe, expect, it } from "vitest";
import { x25519 } from "@noble/curves/ed25519.js";
import { base64urlDecode, base64urlEncode } from "../../shared/encoding";
import { channelKeys, commitment, newPoint, open } from "../../clients/minca/protocol/channel";
import { codeRoom, codeSecret, connectPage, newCode } from "../../shared/minca/code";
import { checkGrant, grantByCode } from "../../clients/minca/protocol/grant";
import { TestHomeExchange, TestProgramExchange } from "./minca-exchanges";
import { CODE_TYPES, SEQ } from "../../clients/minca/protocol/messages";
import { noteNonce, signNote, verifyNote } from "../../shared/minca/note";
import { EventQueue, type JoinRoom, type RoomEvent, type RoomTransport } from "../../clients/minca/protocol/transport";
import { newP256Key } from "../../shared/minca/es256";
import { HOME, ignored, newAccount, programAndHome, recorded, states, tampered } from "./minca";
import { sleep, waitFor } from "./wait";

type Msg = Extract<RoomEvent, { kind: "message" }>;

function collect(t: RoomTransport): RoomEvent[] {
  const got: RoomEvent[] = [];
  t.listen((e) => void got.push(e));
  return got;
}

const SEALED: Array<[string, number]> = [
  [CODE_TYPES.home, SEQ.home],
  [CODE_TYPES.heard, SEQ.heard],
  [CODE_TYPES.answer, SEQ.answer],
  [CODE_TYPES.ask, SEQ.ask],
  [CODE_TYPES.done, SEQ.done],
];

/** Tries every sealed message of a recording with keys someone holding the code could make. */
function opensAnything(recording: Msg[], code: string): boolean {
  const secret = codeSecret(code);
  const O = recording.find((m) => m.type === CODE_TYPES.key)!.payload as { key: string };
  const J = recording.find((m) => m.type === CODE_TYPES.point)!.payload as { key: string };
  const o = base64urlDecode(O.key);
  const j = base64urlDecode(J.key);
  const guesses = [newPoint(), newPoint()].flatMap((mine) => [
    channelKeys(secret, mine.secret, o, o, j),
    channelKeys(secret, mine.secret, j, o, j),
  ]);
  for (const m of recording) {
    for (const k of guesses) {
      for (const [type, seq] of SEALED) {
        if (open(k.home, type, seq, m.payload) !== null || open(k.program, type, seq, m.payload) !== null) return true;
      }
    }
  }
  return false;
}

/** A transport that plays back recorded messages as if from `from`, to whoever listens. */
function playback(from: string, messages: Msg[]): JoinRoom {
  return async () => {
    const events = new EventQueue();
    setTimeout(() => {
      for (const m of messages) events.emit({ ...m, from });
    }, 10);
    return { did: (await newP256Key()).did, peers: [from], send() {}, listen: (l) => events.listen(l), close() {} };
  };
}

export function roomContract(name: string, rooms: () => JoinRoom): void {
  describe(`${name}: the code-channel room (docs/minca-rooms.md)`, () => {
    it("a peer joining is welcomed with the peers present; the others hear of it, and of its going", async () => {
      const join = rooms();
      const room = codeRoom(codeSecret(newCode()));
      const a = await join(room);
      const aGot = collect(a);
      expect(a.peers).toEqual([]);
      const b = await join(room);
      expect(b.peers).toEqual([a.did]);
      await waitFor(() => aGot.some((e) => e.kind === "peer" && e.did === b.did), { what: "peer" });
      b.close();
      await waitFor(() => aGot.some((e) => e.kind === "gone" && e.did === b.did), { what: "gone" });
      a.close();
    });

    it("a message reaches its `to` only, or every other peer, from the sender's proven did whatever it says", async () => {
      const join = rooms();
      const room = codeRoom(codeSecret(newCode()));
      const a = await join(room);
      const b = await join(room);
      const c = await join(room);
      const [aGot, bGot, cGot] = [collect(a), collect(b), collect(c)];
      a.send({ type: "x:one", to: b.did, payload: { n: 1 }, from: c.did } as any);
      a.send({ type: "x:all", payload: { n: 2 } });
      await waitFor(() => cGot.some((e) => e.kind === "message" && e.type === "x:all"), { what: "broadcast" });
      await waitFor(() => bGot.filter((e) => e.kind === "message").length === 2, { what: "both at b" });
      const atB = bGot.filter((e): e is Msg => e.kind === "message");
      expect(atB.map((m) => [m.type, m.from, m.payload])).toEqual([
        ["x:one", a.did, { n: 1 }],
        ["x:all", a.did, { n: 2 }],
      ]);
      expect(cGot.filter((e) => e.kind === "message").map((m) => (m as Msg).type)).toEqual(["x:all"]);
      expect(aGot.filter((e) => e.kind === "message")).toEqual([]);
      for (const t of [a, b, c]) t.close();
    });
  });

  describe(`${name}: the Minca protocol section 3, connecting by code`, () => {
    it("the room for a code, and the link that carries it: the program ends holding a grant that verifies, after the check is typed", async () => {
      const { program, home, account, shown } = await programAndHome(rooms());
      expect(program.link).toBe(`${HOME}/connect#${program.code}`);
      const got = await program.outcome;
      expect(home.room).toBe(program.room);
      if (!got.ok) throw new Error(`${got.reason}: ${got.message}`);
      expect(got.grant.did).toBe(account.key.did);
      expect(got.grant.home).toBe(connectPage(HOME));
      expect(got.grant.note.payload).toMatchObject({ aud: got.key.did, iss: account.key.did, sub: account.key.did, cmd: "/record" });
      expect((await checkGrant(got.grant, { audience: got.key.did, recordsOnly: true })).ok).toBe(true);
      expect(shown).toEqual([{ name: "a terminal", did: got.key.did, check: program.expectedCheck }]);
      expect(await home.outcome).toMatchObject({ status: "done" });
    });

    it("the code alone does not open a recorded exchange", async () => {
      const recording: Msg[] = [];
      const join = recorded(rooms(), recording);
      const { program, home, account } = await programAndHome(join);
      expect((await program.outcome).ok).toBe(true);
      expect(await home.outcome).toMatchObject({ status: "done" });
      expect(recording.map((m) => m.type).sort()).toEqual(Object.values(CODE_TYPES).sort());
      const text = JSON.stringify(recording);
      expect(text).not.toContain(account.key.did);
      expect(text).not.toContain("home.example");
      expect(opensAnything(recording, program.code)).toBe(false);
    });

    it("a recording of the room, and the code learned later, open nothing", async () => {
      const recording: Msg[] = [];
      const { program } = await programAndHome(recorded(rooms(), recording));
      expect((await program.outcome).ok).toBe(true);
      // Later, someone with the recording and the code plays the program's side to a home...
      const fromProgram = recording.filter((m) =>
        [CODE_TYPES.hello, CODE_TYPES.point, CODE_TYPES.ask, CODE_TYPES.done].includes(m.type as any),
      );
      const events: string[] = [];
      const home = new TestHomeExchange({
        origin: HOME,
        link: program.link,
        account: await newAccount(),
        join: playback(fromProgram[0].from, fromProgram),
        approve: async () => ({ allow: true }),
        helloTimeoutMs: 1_000,
        doneTimeoutMs: 300,
        onEvent: (e) => void (e.kind === "state" && events.push(e.state)),
      });
      await home.start();
      await sleep(300);
      home.close();
      // ...whose point matches the commitment, but whose ask does not open with the new home's key.
      expect(events).not.toContain("asked");
      expect(opensAnything(recording, program.code)).toBe(false);
    });

    it("a relay that relabels or repeats messages changes nothing", async () => {
      // Every message each side receives arrives twice, and once more under every sealed type.
      const evil = (e: Msg): RoomEvent[] => [e, e, ...SEALED.map(([type]) => ({ ...e, type }))];
      const join = rooms();
      const { program, home, homeEvents } = await programAndHome(join, {
        programJoin: tampered(join, evil),
        homeJoin: tampered(join, evil),
      });
      const got = await program.outcome;
      expect(got.ok).toBe(true);
      expect(await home.outcome).toMatchObject({ status: "done" });
      expect(states(homeEvents)).toEqual(["waiting", "keyed", "homed", "asked", "answered", "done"]);
    });

    it("a code works for one program: a second with the same code is not answered", async () => {
      const join = rooms();
      const account = await newAccount();
      const first = new TestProgramExchange({ home: HOME, name: "first", join, timeoutMs: 2_500 });
      await first.start();
      const second = new TestProgramExchange({ home: HOME, name: "second", join, code: first.code, timeoutMs: 2_500 });
      await second.start();
      const home = new TestHomeExchange({
        origin: HOME,
        link: first.link,
        account,
        join,
        helloTimeoutMs: 5_000,
        approve: async (s) => {
          first.enterCheck(s.check);
          second.enterCheck(s.check);
          return { allow: true };
        },
      });
      await home.start();
      const winner = await Promise.race([first.outcome.then(() => first), second.outcome.then(() => second)]);
      const loser = winner === first ? second : first;
      expect(await winner.outcome).toMatchObject({ ok: true });
      expect(await home.outcome).toMatchObject({ status: "done" });
      // The other never got a code:key: it still waits, with nothing from anyone.
      expect(loser.state).toBe("waiting");
      expect(loser.expectedCheck).toBeUndefined();
      loser.close();
      expect(await loser.outcome).toMatchObject({ ok: false, reason: "closed" });
    });

    it("once the first ask opens the code is spent: code:done from any other peer is ignored", async () => {
      const join = rooms();
      const pair = await programAndHome(join, { typesCheck: false });
      await waitFor(() => pair.home.state === "answered", { what: "the answer" });
      const stranger = await join(pair.program.room);
      stranger.send({ type: CODE_TYPES.done, payload: "AAAA" });
      stranger.send({ type: CODE_TYPES.ask, payload: "AAAA" });
      await waitFor(() => ignored(pair.homeEvents).length >= 2, { what: "both ignored" });
      expect(ignored(pair.homeEvents)).toEqual([
        "code:done: not the program this exchange is with",
        "code:ask: not the program this exchange is with",
      ]);
      expect(pair.home.state).toBe("answered");
      pair.program.enterCheck(pair.program.expectedCheck!);
      expect(await pair.home.outcome).toMatchObject({ status: "done" });
      stranger.close();
    });

    it("saying no reaches the program", async () => {
      const { program, home } = await programAndHome(rooms(), { decide: () => ({ allow: false, reason: "not now" }) });
      expect(await program.outcome).toEqual({ ok: false, reason: "denied", message: "not now" });
      expect(await home.outcome).toEqual({ status: "denied", reason: "not now" });
    });

    it("a note for another key, or for more than records, is refused", async () => {
      const other = await newP256Key();
      const forAnother = await programAndHome(rooms(), {
        home: { makeGrant: (account, req) => grantByCode(account, { ...req, audience: other.did }) },
      });
      expect(await forAnother.program.outcome).toMatchObject({
        ok: false,
        reason: "refused",
        message: "the note is made out to another key",
      });

      const wide = await programAndHome(rooms(), {
        home: {
          makeGrant: async (account, req) => {
            const g = await grantByCode(account, req);
            return { ...g, note: await signNote(account.key, { ...g.note.payload, cmd: "/", nonce: noteNonce() }) };
          },
        },
      });
      expect(await wide.program.outcome).toMatchObject({ ok: false, reason: "refused", message: "the note grants more than records" });
    });

    it("the program asks only the home it opened, and keeps that home, whatever the answer names", async () => {
      const elsewhere = await programAndHome(rooms(), { home: { origin: "https://other.example" } });
      await waitFor(() => ignored(elsewhere.programEvents).length > 0, { what: "code:home ignored" });
      expect(ignored(elsewhere.programEvents)).toEqual(["code:home: code:home names another origin than the home opened"]);
      await sleep(100);
      expect(elsewhere.program.state).toBe("keyed"); // no code:ask was sent
      expect(states(elsewhere.homeEvents)).not.toContain("asked");
      elsewhere.home.close();
      elsewhere.program.close();

      const renamed = await programAndHome(rooms(), {
        home: { makeGrant: async (a, r) => ({ ...(await grantByCode(a, r)), home: "https://other.example/connect" }) },
      });
      const got = await renamed.program.outcome;
      expect(got.ok && got.grant.home).toBe("https://home.example/connect");
    });

    it("a home opened at a link nobody waits on any more says so", async () => {
      const home = new TestHomeExchange({
        origin: HOME,
        link: `${HOME}/connect#${newCode()}`,
        account: await newAccount(),
        join: rooms(),
        approve: async () => ({ allow: true }),
        helloTimeoutMs: 300,
      });
      await home.start();
      expect(await home.outcome).toEqual({ status: "nobody_waiting" });
      const noCode = new TestHomeExchange({
        origin: HOME,
        link: `${HOME}/connect`,
        account: await newAccount(),
        join: rooms(),
        approve: async () => ({ allow: true }),
      });
      await noCode.start();
      expect(await noCode.outcome).toEqual({ status: "no_code" });
    });

    it("the program keeps its note only once the person gives the code the home shows", async () => {
      const pair = await programAndHome(rooms(), { typesCheck: false });
      await waitFor(() => pair.program.state === "answered", { what: "a checked grant, held" });
      const right = pair.program.expectedCheck!;
      const wrong = String((Number(right) + 1) % 1_000_000).padStart(6, "0");
      expect(pair.program.enterCheck(wrong)).toBe(false);
      await sleep(100);
      expect(pair.program.state).toBe("answered"); // nothing kept, no code:done
      expect(states(pair.homeEvents)).not.toContain("done");
      expect(pair.program.enterCheck(right)).toBe(true);
      expect((await pair.program.outcome).ok).toBe(true);
      expect(await pair.home.outcome).toMatchObject({ status: "done" });

      const giveUp = await programAndHome(rooms(), { typesCheck: false, program: { checkAttempts: 1 }, home: { doneTimeoutMs: 500 } });
      await waitFor(() => giveUp.program.state === "answered", { what: "answered" });
      giveUp.program.enterCheck("x");
      expect(await giveUp.program.outcome).toMatchObject({ ok: false, reason: "check_mismatch" });
      expect(await giveUp.home.outcome).toMatchObject({ status: "granted", why: "no code:done in time" });
    });

    it("a point that breaks its commitment is ignored", async () => {
      const join = rooms();
      const code = newCode();
      const room = codeRoom(codeSecret(code));
      const liar = await join(room);
      const [promised, sent] = [newPoint(), newPoint()];
      const liarGot = collect(liar);
      const homeEvents: any[] = [];
      const home = new TestHomeExchange({
        origin: HOME,
        link: `${HOME}/connect#${code}`,
        account: await newAccount(),
        join,
        approve: async () => ({ allow: true }),
        helloTimeoutMs: 5_000,
        onEvent: (e) => void homeEvents.push(e),
      });
      await home.start();
      await waitFor(() => liarGot.some((e) => e.kind === "peer"), { what: "the home" });
      liar.send({ type: CODE_TYPES.hello, payload: { commit: base64urlEncode(commitment(promised.point)) } });
      await waitFor(() => liarGot.some((e) => e.kind === "message" && e.type === CODE_TYPES.key), { what: "code:key" });
      liar.send({ type: CODE_TYPES.point, payload: { key: base64urlEncode(sent.point) } });
      await waitFor(() => ignored(homeEvents).length > 0, { what: "ignored" });
      expect(ignored(homeEvents)).toEqual(["code:point: the point breaks its commitment"]);
      expect(home.state).toBe("keyed");
      expect(liarGot.some((e) => e.kind === "message" && e.type === CODE_TYPES.home)).toBe(false);
      home.close();
      liar.close();
    });

    it("each exchange has keys of its own on both sides, so seeing one tells nothing about another", async () => {
      const one = await programAndHome(rooms());
      const two = await programAndHome(rooms());
      const [a, b] = await Promise.all([one.program.outcome, two.program.outcome]);
      if (!a.ok || !b.ok) throw new Error("both exchanges should connect");
      expect(one.program.code).not.toBe(two.program.code);
      expect(one.program.ownPoint).not.toEqual(two.program.ownPoint);
      expect(one.home.ownPoint).not.toEqual(two.home.ownPoint);
      expect(new Set([one.program.roomDid, one.home.roomDid, two.program.roomDid, two.home.roomDid]).size).toBe(4);
      expect(a.key.did).not.toBe(b.key.did);
      // The points of one exchange give nothing in the other: its shared secret is another.
      expect(x25519.getSharedSecret(newPoint().secret, one.home.ownPoint)).not.toEqual(
        x25519.getSharedSecret(newPoint().secret, two.home.ownPoint),
      );
      expect((await verifyNote(a.grant.note)).ok && (await verifyNote(b.grant.note)).ok).toBe(true);
    });
  });
}
