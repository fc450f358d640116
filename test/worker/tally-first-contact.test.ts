// What a first envelope between two users keeps, and where (durable-objects/tally/tally-contacts.ts):
// a contact is kept by the user who wrote, only. Receiving writes nothing, so an online delivery
// between users who never wrote to each other keeps nothing at the recipient (no table, no row, no
// lease at the ledger); envelopes sent together to a new contact note it once; the sender's share is
// charged what the delivery made (its own contact row and database, and the recipient's database
// only when the envelope was stored). Rows written are what a Durable Object's storage is billed by.
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { TallyUser } from "../../durable-objects/tally/tally-user";
import { CONTACT_ROW_BYTES } from "../../durable-objects/tally/tally-contacts";
import { STORAGE_LIMITS } from "../../shared/limits";
import { rowBytes } from "../../shared/storage";
import type { Usage } from "../../server/stats";
import { newUser, opaqueEnvelope } from "../helpers/tally";
import { contactRows, registerDevice, stubOf } from "../helpers/tally-user";
import { waitFor } from "../helpers/wait";

/** The rows the object's queries wrote since it was last asked. */
const taken = (stub: DurableObjectStub<TallyUser>) =>
  runInDurableObject(stub, (o) => (o as unknown as { objectUsage: { take(): Usage } }).objectUsage.take().rows_written ?? 0);

/** The tables the object has made (none: it keeps nothing). */
const tables = (stub: DurableObjectStub<TallyUser>) =>
  runInDurableObject(stub, (_o, state) =>
    state.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\'")
      .toArray()
      .map((r) => r.name),
  );

/** The sender's share as its object holds it now: tokens left. */
const shareTokens = (stub: DurableObjectStub<TallyUser>) =>
  runInDurableObject(
    stub,
    (o) => (o as unknown as { sending: { share: { state: { tokens: number } | undefined } } }).sending.share.state?.tokens,
  );

describe("a first envelope between two users", () => {
  it("a contact is kept by the user who wrote: an envelope delivered online to a user who never wrote to its sender keeps nothing at the recipient (no table, no row, no lease)", async () => {
    const alice = newUser();
    const bob = newUser();
    const b = await registerDevice(bob);
    const a = await registerDevice(alice);
    for (let i = 0; i < 3; i++) {
      a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, `m${i}`) });
      expect((await a.next("queued")).status).toBe("stored"); // presence is not told to strangers
    }
    await waitFor(() => b.ofType("peer_envelope").length === 3, { what: "bob's device has the three envelopes" });
    expect(await tables(stubOf(bob))).toEqual([]);
    expect(await taken(stubOf(bob))).toBe(0);
    expect(await stubOf(bob).leaseHeld()).toBe(0);
    // The sender keeps its contact: the user it wrote to.
    await waitFor(async () => (await contactRows(stubOf(alice))).some((r) => r.peer_hex === bob.hex && r.sent === 1), {
      what: "alice's contact noted",
    });
    a.close();
    b.close();
  });

  it("envelopes sent together to a user not yet a contact note it once: the sender writes what one first envelope writes", async () => {
    const bob = newUser();
    const b = await registerDevice(bob);
    const rowsFor = async (inFlight: number) => {
      const alice = newUser();
      const a = await registerDevice(alice);
      await taken(stubOf(alice));
      for (let i = 0; i < inFlight; i++) a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, `x${i}`) });
      for (let i = 0; i < inFlight; i++) await a.next("queued");
      await waitFor(async () => (await contactRows(stubOf(alice))).some((r) => r.peer_hex === bob.hex), { what: "the contact noted" });
      const rows = await taken(stubOf(alice));
      a.close();
      return rows;
    };
    const one = await rowsFor(1);
    const eight = await rowsFor(8);
    // One contact row however many envelopes waited on its note; the share may be written ahead once more.
    expect(eight).toBeLessThanOrEqual(one + 1);
    b.close();
  });

  it("a first envelope delivered online charges the sender's share its own contact row and database, not the recipient's database", async () => {
    const alice = newUser();
    const bob = newUser();
    const b = await registerDevice(bob);
    // bob wrote to alice: her envelope is delivered (and answered so), nothing stored for it
    b.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(bob, alice, "bob-first") });
    await b.next("queued");
    await waitFor(async () => (await contactRows(stubOf(bob))).some((r) => r.peer_hex === alice.hex), { what: "bob's contact noted" });
    const a = await registerDevice(alice);
    await a.next("peer_envelope");
    const full = await runInDurableObject(
      stubOf(alice),
      (o) => (o as unknown as { sending: { share: { capacity: number } } }).sending.share.capacity,
    );
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "answer") });
    expect((await a.next("queued")).status).toBe("delivered");
    const left = await shareTokens(stubOf(alice));
    expect(full - (left ?? full)).toBe(CONTACT_ROW_BYTES + STORAGE_LIMITS.database_bytes_tally);
    a.close();
    b.close();
  });

  it("envelopes sent together to a user not yet a contact are charged its contact row and the databases once", async () => {
    const alice = newUser();
    const bob = newUser(); // offline, and alice a stranger to him: every envelope is stored and charged as stored
    const a = await registerDevice(alice);
    const envelopes = Array.from({ length: 8 }, (_, i) => opaqueEnvelope(alice, bob, `t${i}`));
    const full = await runInDurableObject(
      stubOf(alice),
      (o) => (o as unknown as { sending: { share: { capacity: number } } }).sending.share.capacity,
    );
    for (const e of envelopes) a.send({ type: "queue_peer_envelope", envelope: e });
    for (let i = 0; i < envelopes.length; i++) expect((await a.next("queued")).status).toBe("stored");
    const spent = full - ((await shareTokens(stubOf(alice))) ?? full);
    // each envelope's row; once: alice's contact row, her database (she held nothing) and bob's
    const once = CONTACT_ROW_BYTES + 2 * STORAGE_LIMITS.database_bytes_tally;
    const rows = envelopes.reduce((n, e) => n + rowBytes(JSON.stringify(e).length), 0);
    expect(spent).toBeLessThanOrEqual(rows + once);
    expect(spent).toBeGreaterThan(rows + once - 1_000); // the share refills a little meanwhile
    a.close();
  });
});
