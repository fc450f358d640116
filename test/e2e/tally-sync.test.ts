// Ledger sync through the running relay (the Tally protocol sections 12 and 13), with no direct channel:
// every sync message travels as an envelope.
import { afterEach, describe, expect, inject, it } from "vitest";
import { connectInMemory, memoryStore, type InnerMessage, type TallyClient } from "../../clients/tally/index";
import { device, exchange, newUser, type User } from "../helpers/tally";
import { waitFor } from "../helpers/wait";

const relay = inject("relayUrl");
const open: TallyClient[] = [];
afterEach(() => {
  for (const c of open.splice(0)) c.close();
});
const FAST = { presenceIntervalMs: 300, allowanceMs: 3_000 };

async function dev(user: User, opts: Record<string, unknown> = {}, before?: (c: TallyClient) => void) {
  const c = await device(relay, user, { sync: FAST, ...opts }, before);
  open.push(c);
  return c;
}

async function ledgerIds(c: TallyClient): Promise<string[]> {
  return (await c.store.listLedger()).map((e) => e.id).sort();
}

/** Alice and Bob become friends and exchange a few messages, all receipted. */
async function friends(alice: User, bob: User) {
  const a = await dev(alice);
  const b = await dev(bob);
  const done = new Set<string>();
  a.on("receipt", (id) => void done.add(id));
  b.on("receipt", (id) => void done.add(id));
  const ids = [
    await b.send(alice.npub, "friend_request", { name: "bob" }),
    await a.send(bob.npub, "friend_accept", {}),
    await b.send(alice.npub, "transaction_created", { amount: 3 }),
    await b.send(alice.npub, "note", { text: "thanks" }),
    await a.send(bob.npub, "note", { text: "sure" }),
  ];
  await waitFor(() => ids.every((id) => done.has(id)), { what: "all receipts" });
  await waitFor(async () => (await a.store.listLedger()).length === 5 && (await b.store.listLedger()).length === 5, {
    what: "ledgers",
  });
  return { a, b, ids };
}

describe("the Tally protocol section 12: ledger recovery", () => {
  it("12.4-12.7 a client whose data was wiped recovers its friendships and messages from a friend; a forged entry is dropped", async () => {
    const alice = newUser();
    const bob = newUser();
    const { a, b, ids } = await friends(alice, bob);
    // Bob's ledger also holds a forged entry: a real one with its payload changed.
    const real = (await b.store.listLedger()).find((e) => e.type === "transaction_created")!;
    await b.store.appendLedger({ ...real, id: "forged-1", payload: { amount: 3000 } });
    a.close();

    const applied: Array<[string, string]> = [];
    const kept: string[] = [];
    const wiped = await dev(alice, { store: memoryStore() }, (c) => {
      c.on("message", (m, via) => void applied.push([m.type, via]));
      c.on("peer_kept", (u) => void kept.push(u));
    });
    await waitFor(async () => (await wiped.store.listLedger()).length === 5, { what: "recovered ledger", timeout: 30_000 });
    expect(await ledgerIds(wiped)).toEqual([...ids].sort());
    expect(await wiped.store.hasLedger(bob.npub, "forged-1")).toBe(false);
    // Inbound-like entries went through the handler in chronological order; outbound-only did not.
    expect(applied).toEqual([
      ["friend_request", "sync"],
      ["transaction_created", "sync"],
      ["note", "sync"],
    ]);
    // The friendship is recovered: bob is kept past the allowance.
    await waitFor(() => kept.includes(bob.npub), { what: "peer_kept" });
    expect(wiped.sync.isFriend(bob.npub)).toBe(true);
    expect(b.npub).toBe(bob.npub);
  });

  it("12.8 an unknown peer that never becomes a friend is dropped after the allowance", async () => {
    const alice = newUser();
    const mallory = newUser();
    const dropped: string[] = [];
    const a = await dev(alice, { sync: { ...FAST, allowanceMs: 800 } }, (c) => {
      c.on("peer_dropped", (u) => void dropped.push(u));
      c.on("message", () => "ignored"); // the app ignores strangers' messages: no ledger entry
    });
    const m = await dev(mallory);
    await exchange(m, alice.npub);
    m.connectPeer(alice.npub);
    await waitFor(() => dropped.includes(mallory.npub), { what: "peer_dropped", timeout: 5_000 });
    expect(a.sync.isFriend(mallory.npub)).toBe(false);
    expect(await a.store.listLedger()).toEqual([]);
  });

  it("12.3 sync messages are never receipted and never enter the processed set", async () => {
    const alice = newUser();
    const bob = newUser();
    const { a, b, ids } = await friends(alice, bob);
    a.close();
    const receipts: string[] = [];
    b.on("receipt", (id) => void receipts.push(id));
    const wiped = await dev(alice, { store: memoryStore() });
    await waitFor(async () => (await wiped.store.listLedger()).length === 5, { what: "recovered ledger", timeout: 30_000 });
    // A note sent now reaches bob after anything the wiped client sent him before it (one relay,
    // in order): had it receipted a sync message, bob would hold that receipt by then.
    const marks: string[] = [];
    b.on("message", (m) => void marks.push(m.id));
    const mark = await wiped.send(bob.npub, "note", { text: "after the recovery" }, { paths: "relay" });
    await waitFor(() => marks.includes(mark), { what: "the note after the recovery" });
    await b.idle();
    expect(receipts).toEqual([]);
    // The processed set holds the applied messages (so a late relay copy is not applied again) ...
    for (const id of [ids[0], ids[2], ids[3]]) expect(await wiped.store.hasProcessed(bob.npub, id)).toBe(true);
  });
});

describe("the Tally protocol section 13: multi-device convergence", () => {
  it("13.6/13.8 a second device started empty converges to the first device's ledger with no direct channel", async () => {
    const alice = newUser();
    const bob = newUser();
    const { ids } = await friends(alice, bob);
    const second = await dev(alice, { store: memoryStore() });
    await waitFor(async () => (await second.store.listLedger()).length === 5, { what: "converged", timeout: 15_000 });
    expect(await ledgerIds(second)).toEqual([...ids].sort());
    expect(second.sync.isFriend(bob.npub)).toBe(true);
  });

  it("13.5 a message received on one device appears on the other through the live broadcast, with no receipt loop", async () => {
    const alice = newUser();
    const bob = newUser();
    const { a: a1, b, ids } = await friends(alice, bob);
    const a2 = await dev(alice, { store: memoryStore() });
    await waitFor(async () => (await a2.store.listLedger()).length === 5, { what: "converged" });
    // Bob reaches only a1, over a direct channel; a2 learns of it from a1's broadcast.
    connectInMemory(a1, b);
    const onA2: Array<[string, string]> = [];
    a2.on("message", (m: InnerMessage, via) => void onA2.push([m.id, via]));
    const receipts: string[] = [];
    b.on("receipt", (id) => void receipts.push(id));
    const id = await b.send(alice.npub, "note", { text: "only a1 hears this directly" }, { paths: "direct" });
    await waitFor(() => onA2.length === 1, { what: "broadcast to a2" });
    expect(onA2).toEqual([[id, "sync"]]);
    await waitFor(() => receipts.length === 1, { what: "receipt" });
    // A note from each of alice's devices, by the path a receipt of theirs would take, reaches bob
    // after anything they sent him before it: a second receipt or a loop would be there by then.
    const onB: string[] = [];
    b.on("message", (m) => void onB.push(m.id));
    const marks = [
      await a1.send(bob.npub, "note", { mark: 1 }, { paths: "direct" }),
      await a2.send(bob.npub, "note", { mark: 2 }, { paths: "relay" }),
    ];
    await waitFor(() => marks.every((m) => onB.includes(m)), { what: "the notes after the receipt" });
    await b.idle();
    expect(receipts).toEqual([id]); // one receipt, from a1; none from a2, no loop
    // Both devices hold the six entries and the two notes, nothing more.
    const all = [...ids, id, ...marks].sort();
    await waitFor(async () => (await ledgerIds(a1)).length === 8 && (await ledgerIds(a2)).length === 8, { what: "ledgers" });
    expect(await ledgerIds(a1)).toEqual(all);
    expect(await ledgerIds(a2)).toEqual(all);
  });
});
