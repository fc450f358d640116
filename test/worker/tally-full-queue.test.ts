// A full Tally queue against keys made by the thousand (docs/tally.md, "Queue bounds"; docs/hostile.md):
// senders the recipient has written to (its contacts) are never evicted by strangers; strangers
// together hold at most their share of the queue (tally.queue_strangers_share), a stranger's
// envelope past it evicting strangers' oldest, so fresh keys cannot keep a new correspondent out
// for good; a stranger's envelope to a queue full of contacts' is refused `not_stored` and leaves
// nothing behind; a contact's envelope to a full queue evicts strangers' oldest first.
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { bytesToHex, randomBytes } from "../../shared/encoding";
import { TALLY_LIMITS } from "../../shared/limits";
import { npubEncode } from "../../shared/tally/keys";
import { QUEUE_BOUNDS } from "../../server/tally/queue-bounds";
import { newUser, opaqueEnvelope, type User } from "../helpers/tally";
import { contactRows, deliver, registerDevice, stubOf } from "../helpers/tally-user";
import { waitFor } from "../helpers/wait";

const MAX = TALLY_LIMITS.queue_max_envelopes;
const STRANGERS = QUEUE_BOUNDS.maxStrangerEnvelopes;

/** A fresh key, cheaply: the recipient's object never checks a sender's key (its own object did, at register). */
function freshKey(): User {
  const hex = bytesToHex(randomBytes(32));
  return { secretKey: new Uint8Array(32), hex, npub: npubEncode(hex) };
}

/** One tiny envelope from each of `senders`, handed over in batches as senders' objects do; their statuses. */
async function fromEach(bob: User, senders: User[], id: string): Promise<string[]> {
  const stub = stubOf(bob);
  const out: string[] = [];
  for (let i = 0; i < senders.length; i += 100) {
    const batch = senders.slice(i, i + 100).map((u) => [JSON.stringify(opaqueEnvelope(u, bob, id)), u.hex, id] as [string, string, string]);
    out.push(...((await stub.deliverAll(batch)) as string[]));
  }
  return out;
}

const queueRows = (bob: User) =>
  runInDurableObject(stubOf(bob), (_o, state) =>
    state.storage.sql.exec<{ from_hex: string; id: string }>("SELECT from_hex, id FROM queue ORDER BY seq").toArray(),
  );

/** bob writes to alice through the relay (alice becomes bob's contact), then bob goes offline. */
async function bobWritesTo(bob: User, alice: User): Promise<void> {
  const b = await registerDevice(bob);
  b.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(bob, alice, "hello") });
  expect((await b.next("queued")).status).toBe("stored");
  await waitFor(async () => (await contactRows(stubOf(bob))).some((c) => c.peer_hex === alice.hex && c.sent === 1), {
    what: "bob's contact row for alice",
  });
  b.ws.close();
  await b.closed;
}

/** `count` envelopes from `from` (bob's contact), handed over in batches; every one stored. */
async function many(bob: User, from: User, prefix: string, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, k) => `${prefix}${k}`);
  for (let i = 0; i < ids.length; i += 100) {
    const batch = ids
      .slice(i, i + 100)
      .map((id) => [JSON.stringify(opaqueEnvelope(from, bob, id)), from.hex, id] as [string, string, string]);
    expect(new Set(await stubOf(bob).deliverAll(batch))).toEqual(new Set(["stored"]));
  }
  return ids;
}

describe("a full Tally queue (1,000 fresh keys)", () => {
  it("1,000 fresh keys with one tiny envelope each never evict a contact's stored envelope; strangers hold their share, the newest kept", async () => {
    const bob = newUser();
    const alice = newUser();
    await bobWritesTo(bob, alice);
    const stub = stubOf(bob);
    // alice, bob's contact, stores 150 envelopes (the largest share of the queue by far)...
    const mine = Array.from({ length: 150 }, (_, k) => `a${k}`);
    for (const id of mine) expect(await deliver(stub, JSON.stringify(opaqueEnvelope(alice, bob, id)), alice.hex, id)).toBe("stored");
    // ...and strangers fill their share of the queue, and more.
    const fillers = Array.from({ length: MAX - mine.length }, freshKey);
    expect(new Set(await fromEach(bob, fillers, "fill"))).toEqual(new Set(["stored"]));
    expect((await queueRows(bob)).length).toBe(mine.length + STRANGERS);

    // The attack: 1,000 fresh keys, one tiny envelope each.
    const sybils = Array.from({ length: 1_000 }, freshKey);
    expect(new Set(await fromEach(bob, sybils, "sybil"))).toEqual(new Set(["stored"]));
    const rows = await queueRows(bob);
    expect(rows.filter((r) => r.from_hex === alice.hex).map((r) => r.id)).toEqual(mine);
    // strangers keep their share, the newest first: a new correspondent is never refused for good
    expect(rows.filter((r) => r.from_hex !== alice.hex).map((r) => r.from_hex)).toEqual(sybils.slice(-STRANGERS).map((u) => u.hex));

    // bob's flush brings every envelope alice was told was stored.
    const b = await registerDevice(bob);
    expect(b.ofType("registered")[0].queued).toBe(mine.length + STRANGERS);
    const flushed = b.ofType("peer_envelope").filter((e) => e.from_user_id === alice.npub);
    expect(flushed.map((e) => e.id)).toEqual(mine);
  });

  it("a stranger's envelope to a queue full of contacts' envelopes is answered queued not_stored on its socket and leaves nothing", async () => {
    const bob = newUser();
    const friends = Array.from({ length: MAX / TALLY_LIMITS.queue_max_per_sender }, () => newUser());
    for (const f of friends) await bobWritesTo(bob, f); // bob's device flushes his queue: before the envelopes
    for (const f of friends) await many(bob, f, "f", TALLY_LIMITS.queue_max_per_sender);
    expect((await queueRows(bob)).length).toBe(MAX);
    const carol = newUser();
    const c = await registerDevice(carol);
    c.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(carol, bob, "late") });
    expect(await c.next("queued")).toMatchObject({ id: "late", to_user_id: bob.npub, status: "not_stored" });
    expect((await queueRows(bob)).some((r) => r.id === "late")).toBe(false);
    expect((await contactRows(stubOf(bob))).some((r) => r.peer_hex === carol.hex)).toBe(false);
  });

  it("a contact's envelope to a full queue evicts the oldest stranger's envelope, never another contact's", async () => {
    const bob = newUser();
    const alice = newUser();
    const dave = newUser();
    const erin = newUser();
    const frank = newUser();
    for (const u of [alice, dave, erin, frank]) await bobWritesTo(bob, u);
    // contacts hold the half strangers may not: dave's oldest first
    await many(bob, dave, "d", TALLY_LIMITS.queue_max_per_sender);
    await many(bob, erin, "e", TALLY_LIMITS.queue_max_per_sender);
    await many(bob, frank, "f", MAX - STRANGERS - 2 * TALLY_LIMITS.queue_max_per_sender);
    const fillers = Array.from({ length: STRANGERS }, freshKey);
    await fromEach(bob, fillers, "fill");
    expect((await queueRows(bob)).length).toBe(MAX);
    expect(await deliver(stubOf(bob), JSON.stringify(opaqueEnvelope(alice, bob, "a0")), alice.hex, "a0")).toBe("stored");
    const rows = await queueRows(bob);
    expect(rows.length).toBe(MAX);
    expect(rows[0]).toEqual({ from_hex: dave.hex, id: "d0" }); // dave's, older than every stranger's, stays
    expect(rows.some((r) => r.from_hex === fillers[0].hex)).toBe(false); // the oldest stranger's went
    expect(rows.at(-1)).toEqual({ from_hex: alice.hex, id: "a0" });
  });

  it(`strangers hold at most their share of the queue's bytes (${QUEUE_BOUNDS.maxStrangerBytes}): a new stranger's big envelope evicts the oldest strangers'; a contact's is stored beside them`, async () => {
    const bob = newUser();
    const alice = newUser();
    await bobWritesTo(bob, alice);
    const stub = stubOf(bob);
    const pad = "x".repeat(TALLY_LIMITS.max_envelope_bytes - 1_000);
    const strangers: User[] = [];
    const perStranger = Math.ceil(QUEUE_BOUNDS.maxStrangerBytes / pad.length) + 4;
    for (let i = 0; i < perStranger; i++) {
      const u = freshKey();
      expect(await deliver(stub, JSON.stringify(opaqueEnvelope(u, bob, "big", { pad })), u.hex, "big")).toBe("stored");
      strangers.push(u);
    }
    const kept = await runInDurableObject(stub, (_o, state) =>
      state.storage.sql.exec<{ n: number; b: number }>("SELECT COUNT(*) AS n, TOTAL(bytes) AS b FROM queue").one(),
    );
    expect(kept.b).toBeLessThanOrEqual(QUEUE_BOUNDS.maxStrangerBytes);
    const before = await queueRows(bob);
    expect(before.map((r) => r.from_hex)).toEqual(strangers.slice(-kept.n).map((u) => u.hex));
    expect(await deliver(stub, JSON.stringify(opaqueEnvelope(alice, bob, "a0", { pad })), alice.hex, "a0")).toBe("stored");
    const after = await queueRows(bob);
    expect(after.map((r) => r.from_hex)).toEqual([...before.map((r) => r.from_hex), alice.hex]);
  });
});
