// The Passnote protocol, with device identities (the default), over the in-memory bus: the kind byte, the
// two modes, the plain frame restrictions, the roster and ratchet-hello's acceptance checks.
// Sessions, wiping, revocation and re-hello: identity-sessions.test.ts.
import { describe, expect, it } from "vitest";
import { MemoryBus } from "../../../../clients/passnote/memory-bus";
import { PassnotePeer } from "../../../../clients/passnote/peer";
import { bytesToHex, randomBytes } from "../../../../shared/encoding";
import { formatHlc } from "../../../../clients/passnote/protocol/hlc";
import { ROSTER_COLLECTION, keyTagOf, signRosterRecord } from "../../../../clients/passnote/protocol/roster";
import { KIND_PLAIN, KIND_RATCHET, openPlain, sealPlain } from "../../../../clients/passnote/protocol/seal";
import { newEphemeral, signRatchetHello } from "../../../../clients/passnote/protocol/session";
import { encodeMessage, type Message } from "../../../../clients/passnote/protocol/wire";
import { collectionsNamed, idOf, newGroup, pubOf, viewReceived } from "../../../helpers/passnote";
import { waitFor } from "../../../helpers/wait";
import { settle } from "../../../helpers/passnote-settle";
import { PLAIN_TYPES, join, twoMembers, hasSession, plainOf } from "../../../helpers/passnote-identity";

describe("the Passnote protocol identity mode: the kind byte", () => {
  it("every transport message starts with 0x00 (plain, under the roster key) or 0x01 (ratcheted); user data only in 0x01", async () => {
    const { owner, a, b } = await twoMembers();
    a.peer.put("notes", "n1", { title: "secret title" });
    b.peer.put("diary", "d1", "dear diary");
    await waitFor(() => b.peer.get("notes", "n1") && a.peer.get("diary", "d1"), { what: "user data both ways" });
    const kinds = new Set(a.sent.map(([, f]) => f[0]));
    expect([...kinds].sort()).toEqual([KIND_PLAIN, KIND_RATCHET]);
    const view = viewReceived(owner.group.rosterKey, b.received);
    expect(view.other).toBe(0);
    expect(view.ratcheted).toBeGreaterThan(0);
    // A ratcheted frame does not open under the roster key: the roster key alone reads none of it.
    for (const [, f] of a.sent.filter(([, f]) => f[0] === KIND_RATCHET)) expect(openPlain(owner.group.rosterKey, f)).toBeNull();
  });

  it("anything that fails authentication at any layer is dropped silently: another roster key, a forged ratcheted frame", async () => {
    const { a, b } = await twoMembers();
    const before = { ...a.peer.engine.received.frames };
    const dropped: string[] = [];
    a.peer.engine.on("dropped", (_p, why) => void dropped.push(why));
    await a.peer.engine.receive(b.t.self!, sealPlain(randomBytes(32), encodeMessage({ type: "poke" })));
    await a.peer.engine.receive(b.t.self!, Uint8Array.of(0x02, 1, 2, 3));
    expect(a.peer.engine.received.frames).toEqual(before);
    expect(dropped).toEqual(["unauthenticated", "unauthenticated"]);
    expect(a.sent.length).toBeGreaterThan(0);
  });
});

describe("the Passnote protocol identity mode: the two modes", () => {
  it("an identity-mode peer and a passphrase-only peer whose passphrase key is the roster key never agree nor sync", async () => {
    const bus = new MemoryBus();
    const { owner } = newGroup(0);
    const a = await join(bus, owner, "alice");
    const t = await bus.connect();
    const legacy = new PassnotePeer({ transport: t, key: owner.group.rosterKey, node: "legacy" });
    a.peer.put("notes", "k", 1);
    legacy.put("notes", "j", 2);
    a.peer.forceSync();
    legacy.forceSync();
    await settle([a.peer, legacy]);
    expect(a.peer.engine.agreedPeers()).toEqual([]);
    expect(legacy.engine.agreedPeers()).toEqual([]);
    expect(legacy.get("notes", "k")).toBeUndefined();
    expect(a.peer.get("notes", "j")).toBeUndefined();
  });
});

describe("the Passnote protocol identity mode: plain frames", () => {
  it("plain frames carry only handshake, ratchet-hello, hello, poke and the roster collection's state, delta and reconcile", async () => {
    const { owner, a, b } = await twoMembers();
    a.peer.put("notes", "n1", 1);
    b.peer.put("photos", "p1", 2);
    a.peer.forceSync();
    await waitFor(() => b.peer.get("notes", "n1") === 1 && a.peer.get("photos", "p1") === 2, { what: "sync" });
    await settle([a.peer, b.peer]);
    const plain = [...plainOf(owner.group.rosterKey, a.sent), ...plainOf(owner.group.rosterKey, b.sent)];
    expect(plain.length).toBeGreaterThan(0);
    for (const m of plain) expect(PLAIN_TYPES.has(m.type)).toBe(true);
    expect([...collectionsNamed(plain)]).toEqual([ROSTER_COLLECTION]);
    expect(plain.filter((m) => m.type === "delta").length).toBeGreaterThan(0); // the roster itself travels plain
  });

  it("user-collection content in a plain frame is ignored by the receiver: delta, reconcile and state entries", async () => {
    const { owner, a, b } = await twoMembers();
    const plain = (m: Message) => a.peer.engine.receive(b.t.self!, sealPlain(owner.group.rosterKey, encodeMessage(m)));
    const hlc = formatHlc({ wall: Date.now(), counter: 0, node: "bob" });
    a.peer.put("notes", "mine", 1);
    await plain({ type: "delta", collection: "notes", records: [{ key: "injected", value: "x", is_deleted: false, hlc }] });
    await plain({ type: "reconcile", collection: "notes", probes: [], requests: [{ start: 0, end: Number.MAX_SAFE_INTEGER }] });
    await plain({ type: "state", watermarks: [{ collection: "notes", watermark: hlc }] });
    await settle([a.peer, b.peer]);
    expect(a.peer.get("notes", "injected")).toBeUndefined();
    // Nothing about "notes" went back in a plain frame in answer.
    expect(collectionsNamed(plainOf(owner.group.rosterKey, a.sent)).has("notes")).toBe(false);
  });
});

describe("the Passnote protocol identity mode: the roster", () => {
  it("the roster syncs by reconciliation: a device learns the owner's record and its own from the owner", async () => {
    const { owner, bob, b } = await twoMembers();
    await waitFor(() => b.peer.engine.rosterEntry(idOf(owner)) && b.peer.engine.rosterEntry(idOf(bob)), { what: "roster" });
    expect(b.peer.engine.rosterEntry(idOf(bob))).toMatchObject({ device: idOf(bob), revoked: false });
    expect(b.peer.store.size(ROSTER_COLLECTION)).toBe(2);
  });

  it("a roster record not signed by the owner is dropped: a roster-key holder cannot admit itself or revoke a member", async () => {
    const { owner, bob, a, b } = await twoMembers();
    const outsider = newGroup(1).devices[0]; // any Ed25519 key
    const intruder = { group: owner.group, deviceKey: outsider.deviceKey };
    const dropped: string[] = [];
    a.peer.engine.on("dropped", (_p, why) => void dropped.push(why));
    const hlc = formatHlc({ wall: Date.now(), counter: 9, node: "x" });
    const selfAdmitted = signRosterRecord(intruder.deviceKey, pubOf(intruder), false, hlc);
    const forgedRevocation = signRosterRecord(intruder.deviceKey, pubOf(bob), true, hlc);
    const tampered = { ...signRosterRecord(owner.deviceKey, pubOf(bob), false, hlc) };
    tampered.value = { ...(tampered.value as object), revoked: true };
    const frame = encodeMessage({ type: "delta", collection: ROSTER_COLLECTION, records: [selfAdmitted, forgedRevocation, tampered] });
    await a.peer.engine.receive(b.t.self!, sealPlain(owner.group.rosterKey, frame));
    expect(dropped).toEqual(["roster-signature", "roster-signature", "roster-signature"]);
    expect(a.peer.engine.rosterEntry(idOf(intruder))).toBeNull();
    expect(a.peer.engine.rosterEntry(idOf(bob))?.revoked).toBe(false);
    expect(hasSession(a, b)).toBe(true);
  });

  it("applications cannot write the roster collection; only the owner admits and revokes", async () => {
    const { owner, bob, a, b } = await twoMembers();
    expect(() => a.peer.put(ROSTER_COLLECTION, "k", 1)).toThrow();
    expect(() => b.peer.admit(randomBytes(32))).toThrow();
    expect(() => b.peer.revoke(idOf(bob))).toThrow();
    expect(() => a.peer.revoke(idOf(owner))).toThrow(); // the owner cannot revoke itself
  });
});

describe("the Passnote protocol identity mode: ratchet-hello", () => {
  /** A ratchet-hello from bob's transport, changed by `edit`, as a plain frame into alice. */
  async function refusedFor(edit: (h: Parameters<typeof signRatchetHello>[1]) => void, signer?: Uint8Array) {
    const { owner, bob, a, b } = await twoMembers();
    const reasons: string[] = [];
    a.peer.engine.on("helloRefused", (_p, r) => void reasons.push(r));
    const fields = {
      from: b.t.self!,
      to: a.t.self!,
      device: idOf(bob),
      keyTag: keyTagOf(owner.group.groupKey),
      ephemeral: newEphemeral().pub,
    };
    edit(fields);
    const hello = signRatchetHello(signer ?? bob.deviceKey, fields);
    await a.peer.engine.receive(b.t.self!, sealPlain(owner.group.rosterKey, encodeMessage(hello)));
    return { reasons, stillSession: hasSession(a, b) };
  }

  it("accepted only when addressed to this node", async () => {
    expect(await refusedFor((h) => (h.to = "0123456789abcdef"))).toEqual({ reasons: ["not addressed to this node"], stillSession: true });
  });

  it("accepted only when it comes from the transport peer it names", async () => {
    expect(await refusedFor((h) => (h.from = "0123456789abcdef"))).toEqual({
      reasons: ["not from the transport peer it names"],
      stillSession: true,
    });
  });

  it("accepted only when it matches this key generation (keyTag)", async () => {
    expect(await refusedFor((h) => (h.keyTag = keyTagOf(randomBytes(32))))).toEqual({
      reasons: ["another key generation"],
      stillSession: true,
    });
  });

  it("accepted only when it verifies under the key of the roster member it names", async () => {
    expect(await refusedFor(() => undefined, randomBytes(32))).toEqual({ reasons: ["bad signature"], stillSession: true });
  });

  it("a hello from a device whose roster record has not arrived yet is held and re-checked after the next roster change", async () => {
    const bus = new MemoryBus();
    const { owner, devices } = newGroup(1);
    const a = await join(bus, owner, "alice");
    const b = await join(bus, devices[0], "bob"); // not admitted yet
    await waitFor(() => a.peer.engine.peerInfo(b.t.self!)?.held, { what: "bob's hello held" });
    expect(hasSession(a, b)).toBe(false);
    b.peer.put("notes", "early", 1);
    await settle([a.peer, b.peer]);
    expect(a.peer.get("notes", "early")).toBeUndefined();
    a.peer.admit(pubOf(devices[0])); // the roster record arrives: the held hello is accepted
    await waitFor(() => hasSession(a, b) && hasSession(b, a), { what: "sessions after admission" });
    await waitFor(() => a.peer.get("notes", "early") === 1, { what: "sync after admission" });
  });

  it("a fresh X25519 ephemeral per connection, and each side wipes its ephemeral private key once the session exists", async () => {
    const { a, b, owner } = await twoMembers();
    expect(a.peer.engine.peerInfo(b.t.self!)?.ephemeralSecretWiped).toBe(true);
    expect(b.peer.engine.peerInfo(a.t.self!)?.ephemeralSecretWiped).toBe(true);
    const hellos = plainOf(owner.group.rosterKey, a.sent).filter((m) => m.type === "ratchet-hello");
    expect(hellos).toHaveLength(1);
    // A new connection of the same device: a new ephemeral key.
    const again = await twoMembers();
    const next = plainOf(again.owner.group.rosterKey, again.a.sent).find((m) => m.type === "ratchet-hello")!;
    expect(bytesToHex((next as any).ephemeral)).not.toBe(bytesToHex((hellos[0] as any).ephemeral));
  });
});
