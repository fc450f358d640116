// Ledger sync through the running relay at scale and in order (the Tally protocol sections 12.4-12.8 and
// 13.6): equal ledgers exchange nothing, answers apply chronologically across parts, entries too
// large for one part still arrive, a big recovery through the relay keeps the queue usable, and
// a relay reconnect does not leak an unknown peer's connections.
import { afterEach, describe, expect, inject, it } from "vitest";
import { IGNORED, memoryStore, type InnerMessage, type TallyClient, type TallyStore } from "../../clients/tally/index";
import { relaySockets } from "../helpers/tally-sockets";
import { innerToLedgerEntry, type LedgerEntry } from "../../shared/tally/entry";
import { SYNC_DATA, SYNC_HELLO, SYNC_LIMITS, helloParts } from "../../clients/tally/protocol/ledger";
import { signInner } from "../../shared/tally/proof";
import { device, exchange, newUser, type User } from "../helpers/tally";
import { waitFor } from "../helpers/wait";

const relay = inject("relayUrl");
const open: TallyClient[] = [];
afterEach(() => {
  for (const c of open.splice(0)) c.close();
});
const FAST = { presenceIntervalMs: 300, allowanceMs: 10_000 };

async function dev(user: User, opts: Record<string, unknown> = {}, before?: (c: TallyClient) => void) {
  const c = await device(relay, user, { sync: FAST, ...opts }, before);
  open.push(c);
  return c;
}

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();

/** A signed ledger entry of `from` to `to`, as the sender's or receiver's ledger holds it. */
function signed(from: User, to: User, id: string, type: string, createdAt: string, payload: unknown = {}): LedgerEntry {
  const inner = { id, type, from_user_id: from.npub, to_user_id: to.npub, created_at: createdAt, payload };
  return innerToLedgerEntry(signInner(inner, from.secretKey), new Date());
}

/** Counts the sync messages a client receives, by type, with their payload bytes. */
function syncTraffic(c: TallyClient) {
  const t = { hello: 0, helloBytes: 0, data: 0, entries: 0, parts: new Map<string, number>() };
  c.on("sync_message", (m: InnerMessage) => {
    const p = m.payload as { entries?: unknown[]; set?: string; parts?: number };
    if (m.type === SYNC_HELLO) {
      t.hello++;
      t.helloBytes += JSON.stringify(p).length;
    }
    if (m.type === SYNC_DATA) {
      t.data++;
      t.entries += p.entries?.length ?? 0;
      if (p.set) t.parts.set(p.set, p.parts ?? 1);
    }
  });
  return t;
}

async function fill(store: TallyStore, entries: LedgerEntry[]) {
  for (const e of entries) await store.appendLedger(e);
}

describe("12.5/13.6 equal ledgers", () => {
  it("12.5 send all known ids: two friends whose ledgers hold 10,000 equal entries exchange no entries on reconnect", async () => {
    const alice = newUser();
    const bob = newUser();
    const shared: LedgerEntry[] = [
      signed(bob, alice, "req", "friend_request", at(0)),
      signed(alice, bob, "acc", "friend_accept", at(1)),
      signed(bob, alice, "acc-b", "friend_accept", at(2)),
    ];
    for (let i = 0; i < 9_996; i++) {
      const [from, to] = i % 2 ? [alice, bob] : [bob, alice];
      shared.push({
        id: `e${i}`,
        type: "note",
        from_user_id: from.npub,
        to_user_id: to.npub,
        originated_at: at(10 + i),
        timestamp: at(10 + i),
        payload: { i },
      });
    }
    const aStore = memoryStore();
    const bStore = memoryStore();
    await fill(aStore, shared);
    await fill(bStore, [...shared].reverse());
    let aT!: ReturnType<typeof syncTraffic>;
    let bT!: ReturnType<typeof syncTraffic>;
    const marks: string[] = [];
    const b = await dev(bob, { store: bStore }, (c) => {
      bT = syncTraffic(c);
      c.on("message", (m) => void marks.push(`b got ${m.type}`));
    });
    const a = await dev(alice, { store: aStore }, (c) => {
      aT = syncTraffic(c);
      c.on("message", (m) => void marks.push(`a got ${m.type}`));
    });
    // The relay introduces users only after an envelope exchange (their earlier history, here one
    // message, the 10,000th entry of both ledgers).
    await exchange(a, bob.npub);
    // Both ends say what they hold: every one of the 10,000 keys, by id and by hash, in as many
    // messages as the hello is cut into (four here).
    // Bob's hello to alice, and alice's to bob, as their stores list the ledgers.
    const toA = helloParts(await bStore.listLedger(), bob.npub, alice.npub, "count").length;
    const toB = helloParts(await aStore.listLedger(), alice.npub, bob.npub, "count").length;
    await waitFor(() => aT.hello === toA && bT.hello === toB, { what: "both hellos", timeout: 30_000 });
    await a.idle();
    await b.idle();
    expect(a.sync.isFriend(bob.npub) && b.sync.isFriend(alice.npub)).toBe(true);
    // A marker after each hello was answered: anything sent before it has arrived by then (one relay, in order).
    await a.send(bob.npub, "marker", {});
    await b.send(alice.npub, "marker", {});
    await waitFor(() => marks.includes("a got marker") && marks.includes("b got marker"), { what: "markers" });
    console.log(
      `10,000 equal entries: hellos ${aT.hello}+${bT.hello} messages, ${aT.helloBytes + bT.helloBytes} bytes; sync_data ${aT.data + bT.data}, entries ${aT.entries + bT.entries}`,
    );
    expect([aT.data, bT.data, aT.entries, bT.entries]).toEqual([0, 0, 0, 0]);
  });

  it("13.6: two own devices with 10,000 equal entries exchange no entries when the second comes online", async () => {
    const alice = newUser();
    const bob = newUser();
    const ledger: LedgerEntry[] = Array.from({ length: 10_000 }, (_, i) => ({
      id: `s${i}`,
      type: "note",
      from_user_id: bob.npub,
      to_user_id: alice.npub,
      originated_at: at(i),
      timestamp: at(i),
      payload: { i },
    }));
    const s1 = memoryStore();
    const s2 = memoryStore();
    await fill(s1, ledger);
    await fill(s2, ledger);
    let t1!: ReturnType<typeof syncTraffic>;
    let t2!: ReturnType<typeof syncTraffic>;
    const d1 = await dev(alice, { store: s1 }, (c) => {
      t1 = syncTraffic(c);
    });
    const d2 = await dev(alice, { store: s2 }, (c) => {
      t2 = syncTraffic(c);
    });
    const hellos = helloParts(await s1.listLedger(), alice.npub, alice.npub, "count").length;
    await waitFor(() => t1.hello === hellos && t2.hello === hellos, { what: "both hellos", timeout: 30_000 });
    await d1.idle();
    await d2.idle();
    // A live broadcast after the hellos is the marker: it arrives after any answer sent before it.
    const id = await d1.send(bob.npub, "note", { after: true });
    await waitFor(async () => d2.store.hasLedger(alice.npub, id), { what: "broadcast" });
    expect(t2.entries).toBe(1); // the broadcast entry alone
    expect(t1.entries).toBe(0);
  });
});

describe("12.4-12.7 recovery in order and in full", () => {
  it("chronological replay across chunks: a wiped client applies a friend's multi-part answer in time order, a 62 KB entry included", async () => {
    const alice = newUser();
    const bob = newUser();
    const pad = (n: number) => ({ pad: "p".repeat(n) });
    // Bob's ledger in storage order newest first, the answer several parts long.
    const entries = [
      signed(bob, alice, "note-late", "note", at(50), pad(30_000)),
      signed(bob, alice, "tx", "transaction_created", at(40), { blob: "y".repeat(62_000) }),
      signed(bob, alice, "note-mid", "note", at(30), pad(30_000)),
      signed(alice, bob, "acc", "friend_accept", at(20)),
      signed(bob, alice, "req", "friend_request", at(10), pad(30_000)),
    ];
    const bStore = memoryStore();
    await fill(bStore, entries);
    const b = await dev(bob, { store: bStore });
    const applied: string[] = [];
    let t!: ReturnType<typeof syncTraffic>;
    const wiped = await dev(alice, { store: memoryStore() }, (c) => {
      t = syncTraffic(c);
      c.on("message", (m, via) => void (via === "sync" && applied.push(m.id)));
    });
    await exchange(b, alice.npub); // the relay introduces users that exchanged envelopes
    await waitFor(async () => (await wiped.store.listLedger()).length === 6, { what: "recovered ledger", timeout: 30_000 });
    expect([...t.parts.values()].some((n) => n > 1)).toBe(true); // the answer came in several parts
    expect(applied).toEqual(["req", "note-mid", "tx", "note-late"]);
    const tx = (await wiped.store.listLedger()).find((e) => e.id === "tx")!;
    expect((tx.payload as { blob: string }).blob.length).toBe(62_000);
    expect(wiped.sync.isFriend(bob.npub)).toBe(true);
  });

  it("friend sync must not crowd the relay queue: a large recovery goes in windows of parts, and application messages still flow", async () => {
    const alice = newUser();
    const bob = newUser();
    const entries = [signed(bob, alice, "req", "friend_request", at(0)), signed(alice, bob, "acc", "friend_accept", at(1))];
    for (let i = 0; i < 40; i++) entries.push(signed(bob, alice, `big${i}`, "note", at(10 + i), { pad: "q".repeat(45_000) }));
    const bStore = memoryStore();
    await fill(bStore, entries);
    const b = await dev(bob, { store: bStore });
    let t!: ReturnType<typeof syncTraffic>;
    const got: string[] = [];
    const wiped = await dev(alice, { store: memoryStore() }, (c) => {
      t = syncTraffic(c);
      c.on("message", (m) => void got.push(m.type));
    });
    await exchange(b, alice.npub); // the relay introduces users that exchanged envelopes
    await waitFor(() => t.data > 0, { what: "first part", timeout: 30_000 });
    const live = await b.send(alice.npub, "live", { during: "sync" });
    await waitFor(() => got.includes("live"), { what: "the application message during sync", timeout: 30_000 });
    await waitFor(async () => (await wiped.store.listLedger()).length === 44, { what: "all recovered", timeout: 60_000 });
    expect(await wiped.store.hasLedger(bob.npub, live)).toBe(true);
    // No answer set through the relay was larger than the window; it took several rounds.
    expect(Math.max(...t.parts.values())).toBeLessThanOrEqual(SYNC_LIMITS.relay_window_parts);
    expect(t.parts.size).toBeGreaterThan(1);
  });
});

describe("12.6 the remainder, past ignored messages", () => {
  it("12.6 sends the remainder: recovery through the relay completes past 400 ignored entries, which are not handled again", async () => {
    const alice = newUser();
    const bob = newUser();
    // Bob's ledger: 400 messages alice's app ignored, the friendship, then 5 notes alice lost.
    const bEntries = [signed(bob, alice, "req", "friend_request", at(0)), signed(alice, bob, "acc", "friend_accept", at(1))];
    for (let i = 0; i < 400; i++) bEntries.push(signed(bob, alice, `ign${i}`, "spam", at(10 + i), { pad: "s".repeat(700) }));
    for (let i = 0; i < 5; i++) bEntries.push(signed(bob, alice, `note${i}`, "note", at(500 + i)));
    const bStore = memoryStore();
    await fill(bStore, bEntries);
    const aStore = memoryStore();
    await fill(aStore, bEntries.slice(0, 2));
    for (let i = 0; i < 400; i++) await aStore.addProcessed(bob.npub, `ign${i}`, Date.now(), IGNORED);
    const b = await dev(bob, { store: bStore });
    const handled: string[] = [];
    const a = await dev(alice, { store: aStore }, (c) => c.on("message", (m, via) => void (via === "sync" && handled.push(m.id))));
    await exchange(b, alice.npub);
    await waitFor(async () => (await a.store.listLedger()).filter((e) => e.type === "note").length === 5, {
      what: "the 5 notes",
      timeout: 30_000,
    });
    expect(handled.filter((id) => id.startsWith("ign"))).toEqual([]);
    expect(handled.filter((id) => id.startsWith("note")).sort()).toEqual(["note0", "note1", "note2", "note3", "note4"]);
  });
});

describe("12.8 the allowance and the relay connection", () => {
  it("12.8 allowance expiry closes every connection: a relay reconnect drops the unknown peer and closes its channel", async () => {
    const alice = newUser();
    const mallory = newUser();
    const dropped: string[] = [];
    const a = await dev(alice, {}, (c) => c.on("peer_dropped", (u) => void dropped.push(u)));
    const connected = new Promise<void>((r) => a.on("peer_connect", (u) => u === mallory.npub && r()));
    const m = await dev(mallory);
    await exchange(m, alice.npub);
    m.connectPeer(alice.npub);
    await connected;
    let closed = 0;
    a.addDirectChannel(mallory.npub, { send: () => {}, close: () => void closed++ });
    relaySockets(a)[0]!.close(); // the relay connection ends (the client reconnects by itself)
    await waitFor(() => dropped.includes(mallory.npub), { what: "peer_dropped" });
    expect(closed).toBe(1);
    expect(a.sync.mayConnect(mallory.npub)).toBe(false);
  });
});

describe("13.5/13.8 relay or channel, per device", () => {
  it("relay-or-channel chosen per device, failed sends counted: an own device whose channel fails gets the broadcast by the relay", async () => {
    const alice = newUser();
    const bob = newUser();
    const a1 = await dev(alice);
    const a2 = await dev(alice);
    const a3 = await dev(alice);
    await waitFor(() => a1.ownDevices.size === 2, { what: "own devices" });
    // a1 has a working channel to a2, and one to a3 whose sends fail.
    a1.addDirectChannel(alice.npub, { send: (f) => void a2.handleDirectFrame(f, alice.npub) }, a2.deviceId);
    a1.addDirectChannel(
      alice.npub,
      {
        send: () => {
          throw new Error("closing");
        },
      },
      a3.deviceId,
    );
    const id = await a1.send(bob.npub, "note", { n: 1 });
    await waitFor(async () => (await a2.store.hasLedger(alice.npub, id)) && (await a3.store.hasLedger(alice.npub, id)), {
      what: "both own devices",
    });
  });
});
