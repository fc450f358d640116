// The Passnote protocol, with device identities, over the in-memory bus: unused ephemeral secrets
// wiped, revoked and unknown devices, replayed or reordered session frames, and re-hello.
import { describe, expect, it } from "vitest";
import { MemoryBus } from "../../../../clients/passnote/memory-bus";
import { PassnotePeer, type PassnotePeerOptions } from "../../../../clients/passnote/peer";
import { bytesToHex, randomBytes } from "../../../../shared/encoding";
import { ROSTER_COLLECTION, keyTagOf } from "../../../../clients/passnote/protocol/roster";
import { KIND_PLAIN, KIND_RATCHET, openPlain, sealPlain } from "../../../../clients/passnote/protocol/seal";
import { newEphemeral, openSession, signRatchetHello } from "../../../../clients/passnote/protocol/session";
import { requestRehello, sendRatchetHello } from "../../../../clients/passnote/protocol/sessions";
import { makeHandshake } from "../../../../clients/passnote/protocol/handshake";
import { decodeMessage, encodeMessage } from "../../../../clients/passnote/protocol/wire";
import { collectionsNamed, idOf, newGroup, plainType, pubOf, viewReceived } from "../../../helpers/passnote";
import { waitFor } from "../../../helpers/wait";
import { manualClock, settle } from "../../../helpers/passnote-settle";
import { PLAIN_TYPES, join, type Member, twoMembers, hasSession, plainOf } from "../../../helpers/passnote-identity";

describe("the Passnote protocol identity mode: unused ephemeral secrets are wiped on every drop path", () => {
  const stateOf = (x: Member, y: Member) => x.peer.engine.core.peers.get(y.t.self!)!;
  /** x offers y a fresh hello (as a re-send request does) and returns its secret's buffer, unused. */
  const freshSecret = (x: Member, y: Member) => {
    sendRatchetHello(x.peer.engine.core, y.t.self!, stateOf(x, y));
    const secret = stateOf(x, y).mine!.secret!;
    expect(secret.some((b) => b !== 0)).toBe(true);
    return secret;
  };
  const wiped = (b: Uint8Array) => b.every((x) => x === 0);

  /** A pair with a session where bob has stopped: nothing answers alice's hellos any more. */
  async function aliceAlone(opts: Partial<PassnotePeerOptions> = {}) {
    const pair = await twoMembers(opts);
    pair.b.peer.detach();
    return pair;
  }

  it("a hello superseded by a newer one: the older secret is wiped", async () => {
    const { a, b } = await aliceAlone();
    const first = freshSecret(a, b);
    const second = freshSecret(a, b);
    expect(wiped(first)).toBe(true);
    expect(wiped(second)).toBe(false);
  });

  it("the peer leaves, or the engine stops: the secret is wiped", async () => {
    const { a, b } = await aliceAlone();
    const secret = freshSecret(a, b);
    a.peer.engine.peerLeft(b.t.self!);
    expect(wiped(secret)).toBe(true);
    const again = await aliceAlone();
    const s2 = freshSecret(again.a, again.b);
    again.a.peer.detach();
    expect(wiped(s2)).toBe(true);
  });

  it("the peer restarts (a new inst token): the old connection's secret is wiped", async () => {
    const { owner, a, b } = await aliceAlone();
    const secret = freshSecret(a, b);
    const restarted: string[] = [];
    a.peer.engine.on("restarted", (p) => void restarted.push(p));
    await a.peer.engine.receive(b.t.self!, sealPlain(owner.group.rosterKey, encodeMessage(makeHandshake({ inst: "00000000000000ff" }))));
    expect(restarted).toEqual([b.t.self]);
    expect(wiped(secret)).toBe(true);
  });

  it("the peer's device is revoked while a hello waits for its answer: the secret is wiped", async () => {
    const { a, b, bob } = await aliceAlone();
    const secret = freshSecret(a, b);
    a.peer.revoke(idOf(bob));
    expect(wiped(secret)).toBe(true);
  });

  it("each side wipes its ephemeral private key once the session exists: the answering side keeps no copy of its answer's secret", async () => {
    const { a, b } = await twoMembers();
    const held: Array<Uint8Array | undefined> = [];
    // At alice's new session, nothing of her peer state for bob holds a secret any more.
    a.peer.engine.on("session", () => {
      const st = stateOf(a, b) as unknown as Record<string, any>;
      held.push(st.mine?.secret, st.answering?.mine?.secret);
    });
    requestRehello(b.peer.engine.core, a.t.self!, stateOf(b, a)); // bob asks alice to re-send her hello
    await waitFor(() => held.length > 0 && hasSession(b, a) && hasSession(a, b), { what: "alice answers, both re-key" });
    expect(held.filter((x) => x !== undefined)).toEqual([]);
    a.peer.put("notes", "after", 1);
    await waitFor(() => b.peer.get("notes", "after") === 1, { what: "sync in the new session" });
  });

  it("each side wipes its ephemeral private key once the session exists: an answer's key is never reused for a second session", async () => {
    const { owner, bob, a, b } = await twoMembers();
    let sessions = 0;
    a.peer.engine.on("session", () => void sessions++);
    requestRehello(b.peer.engine.core, a.t.self!, stateOf(b, a));
    await waitFor(() => sessions === 1 && hasSession(b, a), { what: "the re-key" });
    // Another fresh hello of bob's, within the interval: it gets no session from alice's answer key.
    const fields = {
      from: b.t.self!,
      to: a.t.self!,
      device: idOf(bob),
      keyTag: keyTagOf(owner.group.groupKey),
      ephemeral: newEphemeral().pub,
    };
    await a.peer.engine.receive(b.t.self!, sealPlain(owner.group.rosterKey, encodeMessage(signRatchetHello(bob.deviceKey, fields))));
    const aliceHellos = plainOf(owner.group.rosterKey, a.sent).filter((m) => m.type === "ratchet-hello").length;
    expect(sessions + 1).toBeLessThanOrEqual(aliceHellos); // every session of alice's took a key of its own
  });

  it("a degenerate peer key fails the session: the secret is wiped all the same", () => {
    const mine = newEphemeral();
    const secret = mine.secret!;
    expect(openSession({ groupKey: randomBytes(32), mine, theirs: new Uint8Array(32), selfId: "1", peerId: "2" })).toBeNull();
    expect(wiped(secret)).toBe(true);
    expect(mine.secret).toBeUndefined();
  });
});

describe("the Passnote protocol identity mode: revoked and unknown devices", () => {
  it("a revoked device and a device never in the roster, both holding the roster key, are refused sessions and learn no user collection name, watermark or record", async () => {
    const bus = new MemoryBus();
    const { owner, devices } = newGroup(3);
    const [bob, revoked, stranger] = devices;
    const a = await join(bus, owner, "alice");
    a.peer.admit(pubOf(bob));
    a.peer.admit(pubOf(revoked));
    a.peer.revoke(idOf(revoked));
    a.peer.put("notes", "plan-key", { title: "quarterly plan" });
    const b = await join(bus, bob, "bob");
    b.peer.put("diary", "diary-key", "dear diary");
    await waitFor(() => b.peer.get("notes", "plan-key") && a.peer.get("diary", "diary-key"), { what: "members converge" });
    await waitFor(() => b.peer.engine.rosterEntry(idOf(revoked))?.revoked, { what: "bob learns the revocation" });
    const refusals: string[] = [];
    for (const m of [a, b]) m.peer.engine.on("helloRefused", (_p, r) => void refusals.push(r));
    const r = await join(bus, revoked, "mallory");
    const s = await join(bus, stranger, "eve");
    await waitFor(() => refusals.filter((x) => x === "revoked device").length >= 2, { what: "both members refuse the revoked device" });
    a.peer.put("notes", "later-key", "after they joined");
    a.peer.forceSync();
    b.peer.forceSync();
    await waitFor(() => b.peer.get("notes", "later-key"), { what: "members still sync" });
    // The outsiders do get the roster (it travels in plain frames): wait until both hold all of it.
    await waitFor(() => [r, s].every((o) => o.peer.store.size(ROSTER_COLLECTION) === a.peer.store.size(ROSTER_COLLECTION)), {
      what: "outsiders hold the roster",
    });
    await settle([a, b, r, s].map((m) => m.peer));
    for (const m of [a, b]) expect(m.peer.engine.sessionPeers().sort()).toEqual([m === a ? b.t.self : a.t.self]);
    for (const outsider of [r, s]) {
      const view = viewReceived(owner.group.rosterKey, outsider.received);
      expect(view.ratcheted).toBe(0); // no member ever sealed anything to it in a session
      expect(view.other).toBe(0);
      for (const m of view.plain) expect(PLAIN_TYPES.has(m.type)).toBe(true);
      expect([...collectionsNamed(view.plain)]).toEqual([ROSTER_COLLECTION]);
      const everything = JSON.stringify(view.plain, (_k, v) =>
        v instanceof Uint8Array ? bytesToHex(v) : typeof v === "bigint" ? String(v) : v,
      );
      for (const secret of ["notes", "diary", "quarterly plan", "dear diary", "after they joined", "plan-key", "diary-key", "later-key"])
        expect(everything).not.toContain(secret);
      expect(outsider.peer.store.collectionNames()).toEqual([ROSTER_COLLECTION]);
    }
    expect(a.peer.engine.peerInfo(s.t.self!)?.held).toBe(true); // never in the roster: held, never accepted
  });

  it("revoking a device with an open session ends the session: later writes do not reach it", async () => {
    const bus = new MemoryBus();
    const { owner, devices } = newGroup(2);
    const a = await join(bus, owner, "alice");
    for (const d of devices) a.peer.admit(pubOf(d));
    const b = await join(bus, devices[0], "bob");
    const c = await join(bus, devices[1], "carol");
    await waitFor(() => hasSession(a, c) && hasSession(b, c) && hasSession(a, b), { what: "three sessions" });
    const ended: string[] = [];
    b.peer.engine.on("sessionEnded", (_p, d) => void ended.push(d));
    a.peer.revoke(idOf(devices[1]));
    expect(hasSession(a, c)).toBe(false);
    await waitFor(() => ended.length === 1, { what: "bob ends carol's session when the revocation arrives" });
    expect(ended).toEqual([idOf(devices[1])]);
    const ratchetedBefore = viewReceived(owner.group.rosterKey, c.received).ratcheted;
    a.peer.put("notes", "after-revocation", 1);
    b.peer.put("notes", "bob-after", 2);
    a.peer.forceSync();
    await waitFor(() => a.peer.get("notes", "bob-after") && b.peer.get("notes", "after-revocation"), { what: "members sync" });
    await settle([a, b, c].map((m) => m.peer));
    expect(c.peer.get("notes", "after-revocation")).toBeUndefined();
    expect(c.peer.get("notes", "bob-after")).toBeUndefined();
    expect(viewReceived(owner.group.rosterKey, c.received).ratcheted).toBe(ratchetedBefore);
  });
});

describe("the Passnote protocol identity mode: session frames", () => {
  it("a captured session frame replayed is dropped, and so is one that another overtook", async () => {
    const { a, b } = await twoMembers();
    const dropped: string[] = [];
    b.peer.engine.on("dropped", (_p, why) => void dropped.push(why));
    a.peer.put("notes", "k1", 1);
    await waitFor(() => b.peer.get("notes", "k1") === 1, { what: "k1" });
    // Capture only once every session frame alice sent has reached bob (and been handled), so the
    // one replayed below is one bob already opened, not one still on its way.
    const ratchetedTo = () => a.sent.filter(([to, f]) => to === b.t.self && f[0] === KIND_RATCHET);
    const ratchetedFrom = () => b.received.filter(([from, f]) => from === a.t.self && f[0] === KIND_RATCHET).length;
    await waitFor(() => ratchetedFrom() === ratchetedTo().length, { what: "alice's session frames delivered" });
    await settle([a.peer, b.peer]);
    const captured = ratchetedTo().at(-1)![1];
    const deltasBefore = b.peer.engine.received.frames.delta;
    await b.peer.engine.receive(a.t.self!, captured);
    expect(dropped).toEqual(["stale"]);
    expect(b.peer.engine.received.frames.delta).toBe(deltasBefore);
    expect(hasSession(b, a)).toBe(true); // a replay does not disturb the session

    // Reorder: hold back alice's next two session frames and deliver them swapped.
    const held: Uint8Array[] = [];
    const original = a.t.send;
    const send = original.bind(a.t);
    a.t.send = (to, f) => {
      if (f[0] === KIND_RATCHET && held.length < 2) {
        held.push(f);
        return Promise.resolve();
      }
      return send(to, f);
    };
    a.peer.put("notes", "k2", 2);
    await settle([a.peer, b.peer]); // k2's frame is made (and held) before k3 is written
    a.peer.put("notes", "k3", 3);
    await waitFor(() => held.length === 2, { what: "two held frames" });
    a.t.send = original;
    await b.peer.engine.receive(a.t.self!, held[1]);
    await b.peer.engine.receive(a.t.self!, held[0]);
    expect(dropped).toEqual(["stale", "stale"]);
    expect(b.peer.get("notes", "k3")).toBe(3);
    expect(b.peer.get("notes", "k2")).toBeUndefined(); // the overtaken frame never opens
    a.peer.forceSync(); // anti-entropy brings it again, in a new frame
    await waitFor(() => b.peer.get("notes", "k2") === 2, { what: "k2 by reconciliation" });
  });

  it("a peer whose frames this side cannot open is asked to re-send its hello, at most once per interval", async () => {
    const { a, b } = await twoMembers();
    const asked: string[] = [];
    b.peer.engine.on("rehello", (p) => void asked.push(p));
    const sessions: string[] = [];
    a.peer.engine.on("session", (p) => void sessions.push(p));
    for (let i = 0; i < 5; i++) {
      const garbage = new Uint8Array(60);
      garbage[0] = KIND_RATCHET;
      garbage.set(randomBytes(40), 20);
      garbage[8] = 50 + i; // a counter ahead of the chain, within reach: tried and failed
      await b.peer.engine.receive(a.t.self!, garbage);
    }
    expect(asked).toEqual([a.t.self]);
    await waitFor(() => sessions.length === 1 && hasSession(b, a), { what: "a new session" });
    a.peer.put("notes", "after", 1);
    await waitFor(() => b.peer.get("notes", "after") === 1, { what: "sync in the new session" });
  });

  it("the ratcheted frames of one session each use a new message key: equal frames seal differently", async () => {
    const { a, b } = await twoMembers();
    a.peer.forceSync();
    await settle([a.peer, b.peer]);
    const toB = a.sent.filter(([to, f]) => to === b.t.self && f[0] === KIND_RATCHET).map(([, f]) => f);
    const counters = toB.map((f) => bytesToHex(f.subarray(1, 9)));
    expect(new Set(counters).size).toBe(toB.length);
    expect(decodeMessage(toB[0].subarray(9))).toBeNull(); // ciphertext, not a frame
  });

  it("a stale hello replayed from beyond the remembered ones does not start an endless exchange: the peers re-key and sync", async () => {
    const clock = manualClock();
    const { owner, a, b } = await twoMembers({ rehelloIntervalMs: 200, now: clock.now });
    const stale = b.sent
      .filter(([, f]) => f[0] === KIND_PLAIN)
      .find(([, f]) => decodeMessage(openPlain(owner.group.rosterKey, f)!)?.type === "ratchet-hello")![1];
    a.peer.engine.core.peers.get(b.t.self!)!.seenEphemerals.length = 0; // as if it fell out of the window
    const hellos = (m: Member) => plainOf(owner.group.rosterKey, m.sent).filter((x) => x.type === "ratchet-hello").length;
    const before = [hellos(a), hellos(b)];
    await a.peer.engine.receive(b.t.self!, stale);
    // The re-key settles; then the engines' clock moves past three re-hello intervals, one at a
    // time, and the peers settle after each: an endless exchange would keep counting up (or never settle).
    await waitFor(() => hasSession(a, b) && hasSession(b, a), { what: "sessions again" });
    await settle([a.peer, b.peer]);
    const after = [hellos(a) - before[0], hellos(b) - before[1]];
    expect(Math.max(...after)).toBeLessThanOrEqual(2);
    for (let i = 0; i < 3; i++) {
      clock.advance(250);
      await settle([a.peer, b.peer]);
      expect([hellos(a) - before[0], hellos(b) - before[1]]).toEqual(after); // it stopped
    }
    a.peer.put("notes", "after-stale", 1);
    await waitFor(() => b.peer.get("notes", "after-stale") === 1, { what: "sync after re-key" });
  });

  it("inst: a restarted identity-mode peer (new token on a live connection) gets a new session and syncs again", async () => {
    const { a, b, bob } = await twoMembers();
    const restarted: string[] = [];
    a.peer.engine.on("restarted", (p) => void restarted.push(p));
    b.peer.detach();
    const b2 = new PassnotePeer({ transport: b.t, identity: bob, node: "bob" });
    b2.put("notes", "after-restart", 1);
    await waitFor(() => restarted.length === 1, { what: "restart seen" });
    await waitFor(() => a.peer.get("notes", "after-restart") === 1, { what: "sync after restart" });
    expect(b2.engine.peerInfo(a.t.self!)?.session).toBe(true);
  });
});

describe("the Passnote protocol identity mode: a peer that seals frames this side cannot open is asked to re-send its hello", () => {
  /**
   * Owner alice and member bob (admitted before either connects), where alice loses frames to bob
   * that `lose` picks while `losing` is on; each side's clock is driven by hand.
   */
  async function lossyPair(lose: (type: string | undefined, frame: Uint8Array) => boolean) {
    const bus = new MemoryBus();
    const { owner, devices } = newGroup(1);
    const clock = { a: 0, b: 0 };
    const control = { losing: true };
    // Alice's only peer is bob.
    const a = await join(
      bus,
      owner,
      "alice",
      { now: () => Date.now() + clock.a, antiEntropyIntervalMs: 0 },
      (_to, f) => control.losing && lose(plainType(owner.group.rosterKey, f), f),
    );
    a.peer.admit(pubOf(devices[0]));
    const b = await join(bus, devices[0], "bob", { now: () => Date.now() + clock.b, antiEntropyIntervalMs: 0 });
    return { owner, a, b, clock, control };
  }

  /** Drops alice's first ratchet-hello to bob; returns once alice holds a session and bob knows alice. */
  async function lostHello() {
    let lost = 0;
    const pair = await lossyPair((type) => type === "ratchet-hello" && lost++ === 0);
    const { a, b } = pair;
    await waitFor(() => hasSession(a, b) && b.peer.engine.rosterEntry(idOf(pair.owner)) !== null && a.peer.engine.pendingFrames() === 0, {
      what: "alice's session, bob's roster",
    });
    return pair;
  }

  it("a lost ratchet-hello: the member holding no session asks when the other's ratcheted frames arrive, and the pair syncs", async () => {
    const { a, b } = await lostHello();
    a.peer.put("notes", "k", 1);
    a.peer.forceSync();
    await waitFor(() => hasSession(b, a) && b.peer.get("notes", "k") === 1, { what: "bob's session and alice's record" });
  });

  it("a lost ratchet-hello heals within one anti-entropy pass (the clock driven past the rehello interval)", async () => {
    const { a, b, clock } = await lostHello();
    // Everything alice sealed so far is gone too (bob may have dropped it before the roster came).
    b.peer.put("notes", "from-bob", 2);
    a.peer.put("notes", "from-alice", 1);
    clock.a += 5_000;
    clock.b += 5_000;
    b.peer.engine.antiEntropyPass(); // bob: no session, his hello unanswered for an interval
    await waitFor(() => hasSession(b, a) && b.peer.get("notes", "from-alice") === 1 && a.peer.get("notes", "from-bob") === 2, {
      what: "both records",
    });
  });

  it("a lost ratchet-hello heals by repair() on the side without a session", async () => {
    const { a, b } = await lostHello();
    a.peer.put("notes", "k", 1);
    b.peer.engine.repair();
    await waitFor(() => hasSession(b, a) && b.peer.get("notes", "k") === 1, { what: "bob's session and alice's record" });
  });

  it("both of this side's handshakes lost: anti-entropy sends no third on the connection (the wire's two); the pair agrees and syncs when it meets again", async () => {
    const { owner, a, b, control } = await lossyPair((type) => type === "handshake");
    await waitFor(() => a.peer.engine.agreedPeers().length === 1 && a.peer.engine.pendingFrames() === 0, { what: "alice agreed" });
    expect(b.peer.engine.agreedPeers()).toEqual([]);
    control.losing = false;
    a.peer.put("notes", "k", 1);
    const handshakes = () => a.sent.filter(([, f]) => plainType(owner.group.rosterKey, f) === "handshake").length;
    a.peer.engine.antiEntropyPass();
    a.peer.engine.repair();
    expect(handshakes()).toBe(2);
    // The transport reports bob lost and met again (a reconnection): a new connection, two new handshakes.
    a.peer.engine.peerLeft(b.t.self!);
    a.peer.engine.peerJoined(b.t.self!);
    await waitFor(() => hasSession(a, b) && hasSession(b, a) && b.peer.get("notes", "k") === 1, { what: "sessions and the record" });
  });
});
