// A full Tally queue against keys made by the thousand (docs/tally.md, "Queue bounds"; docs/hostile.md):
// senders the recipient has written to (its contacts) are never evicted by strangers; a
// stranger's envelope to a full queue is refused `not_stored` and leaves nothing behind; a
// contact's envelope to a full queue evicts strangers' oldest first.
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { bytesToHex, randomBytes } from "../../shared/encoding";
import { TALLY_LIMITS } from "../../shared/limits";
import { npubEncode } from "../../shared/tally/keys";
import { newUser, opaqueEnvelope, type User } from "../helpers/tally";
import { contactRows, deliver, registerDevice, stubOf } from "../helpers/tally-user";
import { waitFor } from "../helpers/wait";

const MAX = TALLY_LIMITS.queue_max_envelopes;

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

describe("a full Tally queue (1,000 fresh keys)", () => {
  it("1,000 fresh keys with one tiny envelope each never evict a contact's stored envelope; they get not_stored and leave no row", async () => {
    const bob = newUser();
    const alice = newUser();
    await bobWritesTo(bob, alice);
    const stub = stubOf(bob);
    // alice, bob's contact, stores 150 envelopes (the largest share of the queue by far)...
    const mine = Array.from({ length: 150 }, (_, k) => `a${k}`);
    for (const id of mine) expect(await deliver(stub, JSON.stringify(opaqueEnvelope(alice, bob, id)), alice.hex, id)).toBe("stored");
    // ...and strangers fill the rest of the queue.
    const fillers = Array.from({ length: MAX - mine.length }, freshKey);
    expect(new Set(await fromEach(bob, fillers, "fill"))).toEqual(new Set(["stored"]));
    expect((await queueRows(bob)).length).toBe(MAX);

    // The attack: 1,000 fresh keys, one tiny envelope each, to the full queue.
    const sybils = Array.from({ length: 1_000 }, freshKey);
    expect(new Set(await fromEach(bob, sybils, "sybil"))).toEqual(new Set(["not_stored"]));
    const rows = await queueRows(bob);
    expect(rows.length).toBe(MAX);
    expect(rows.filter((r) => r.from_hex === alice.hex).map((r) => r.id)).toEqual(mine);
    expect(rows.some((r) => r.id === "sybil")).toBe(false);
    // A refused envelope leaves nothing behind: no contact row for any of the 1,000.
    const contacts = new Set((await contactRows(stub)).map((c) => c.peer_hex));
    expect(sybils.some((u) => contacts.has(u.hex))).toBe(false);

    // bob's flush brings every envelope alice was told was stored.
    const b = await registerDevice(bob);
    expect(b.ofType("registered")[0].queued).toBe(MAX);
    const flushed = b.ofType("peer_envelope").filter((e) => e.from_user_id === alice.npub);
    expect(flushed.map((e) => e.id)).toEqual(mine);
  });

  it("a stranger's envelope to a full queue is answered queued not_stored on its socket", async () => {
    const bob = newUser();
    await fromEach(bob, Array.from({ length: MAX }, freshKey), "fill");
    const carol = newUser();
    const c = await registerDevice(carol);
    c.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(carol, bob, "late") });
    expect(await c.next("queued")).toMatchObject({ id: "late", to_user_id: bob.npub, status: "not_stored" });
    expect((await queueRows(bob)).some((r) => r.id === "late")).toBe(false);
  });

  it("a contact's envelope to a full queue evicts the oldest stranger's envelope, never another contact's", async () => {
    const bob = newUser();
    const alice = newUser();
    const dave = newUser();
    await bobWritesTo(bob, alice);
    await bobWritesTo(bob, dave);
    const stub = stubOf(bob);
    expect(await deliver(stub, JSON.stringify(opaqueEnvelope(dave, bob, "d0")), dave.hex, "d0")).toBe("stored");
    const fillers = Array.from({ length: MAX - 1 }, freshKey);
    await fromEach(bob, fillers, "fill");
    expect(await deliver(stub, JSON.stringify(opaqueEnvelope(alice, bob, "a0")), alice.hex, "a0")).toBe("stored");
    const rows = await queueRows(bob);
    expect(rows.length).toBe(MAX);
    expect(rows[0]).toEqual({ from_hex: dave.hex, id: "d0" }); // dave's, older than every stranger's, stays
    expect(rows.some((r) => r.from_hex === fillers[0].hex)).toBe(false); // the oldest stranger's went
    expect(rows.at(-1)).toEqual({ from_hex: alice.hex, id: "a0" });
  });

  it(`a queue full by bytes (${TALLY_LIMITS.queue_max_bytes}): a new stranger is refused, a contact evicts the oldest strangers' first`, async () => {
    const bob = newUser();
    const alice = newUser();
    await bobWritesTo(bob, alice);
    const stub = stubOf(bob);
    const pad = "x".repeat(TALLY_LIMITS.max_envelope_bytes - 1_000);
    const strangers: User[] = [];
    for (;;) {
      const u = freshKey();
      const status = await deliver(stub, JSON.stringify(opaqueEnvelope(u, bob, "big", { pad })), u.hex, "big");
      if (status === "not_stored") break;
      expect(status).toBe("stored");
      strangers.push(u);
      expect(strangers.length).toBeLessThan(MAX); // full by bytes, long before by count
    }
    const before = await queueRows(bob);
    expect(before.map((r) => r.from_hex)).toEqual(strangers.map((u) => u.hex));
    expect(await deliver(stub, JSON.stringify(opaqueEnvelope(alice, bob, "a0", { pad })), alice.hex, "a0")).toBe("stored");
    const after = await queueRows(bob);
    expect(after.map((r) => r.from_hex)).toEqual([...strangers.slice(1).map((u) => u.hex), alice.hex]);
  });
});
