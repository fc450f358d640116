// Relay-wide totals count what is held, not what is leased (docs/hostile.md, "Relay-wide totals"):
// the slack a lease lends ahead of need is taken back when a claim needs it, so names that hold
// almost nothing cannot make a total unreachable for names that hold data. The totals are set
// on the one ledger object (what STORAGE_*_BYTES set at start), to what is leased now plus 1 MiB.
import { SELF, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { relayLedger } from "../../durable-objects/relay/relay-ledger";
import type { TestRelayLedger as RelayLedger } from "./test-objects";
import { STORAGE_LIMITS } from "../../shared/limits";
import type { StorageKind } from "../../shared/storage";
import { newUser, opaqueEnvelope, type User } from "../helpers/tally";
import type { TallyUser } from "../../durable-objects/tally/tally-user";
import { deliver } from "../helpers/tally-user";

const RELAY = "http://relay.test";
const MAILBOX = `${RELAY}/minca/v1/mailbox`;
const MiB = 1024 * 1024;
let n = 0;
const newTopic = () => `storage-slack-topic-${Date.now()}-${++n}`;
const ledger = () => env.RELAY_LEDGER.get(relayLedger(env).id) as unknown as DurableObjectStub<RelayLedger>;
const tallyStub = (u: User) => env.TALLY_USER.get(env.TALLY_USER.idFromName(u.hex)) as DurableObjectStub<TallyUser>;
const post = async (topic: string, body: string) => (await SELF.fetch(`${MAILBOX}/${topic}`, { method: "POST", body })).status;

/** Sets one kind's total to what is leased now plus `room` bytes; the others to their defaults. */
async function roomFor(kind: StorageKind, room: number): Promise<void> {
  await runInDurableObject(ledger(), async (inst: RelayLedger) => {
    const leased = (await inst.snapshot())[kind].reserved_bytes;
    inst.useTotals({
      tally: STORAGE_LIMITS.tally_bytes,
      mailbox: STORAGE_LIMITS.mailbox_bytes,
      host: STORAGE_LIMITS.host_bytes,
      [kind]: leased + room,
    });
  });
}
const resetTotals = () =>
  runInDurableObject(ledger(), (inst: RelayLedger) => {
    inst.useTotals({ tally: STORAGE_LIMITS.tally_bytes, mailbox: STORAGE_LIMITS.mailbox_bytes, host: STORAGE_LIMITS.host_bytes });
  });

describe("relay-wide totals count bytes held, not leases", () => {
  it("storage slack is lent, never kept: one-byte POSTs to many topics do not fill a 1 MiB mailbox total; a topic that holds data still stores most of it", async () => {
    // 1 MiB of rows, and room for the 26 topics' databases (each topic's first row charges its database)
    await roomFor("mailbox", MiB + 26 * STORAGE_LIMITS.database_bytes_mailbox);
    // The attack: one-byte items to fresh topics, each of which used to take a whole lease block.
    for (let i = 0; i < 24; i++) expect(await post(newTopic(), "x")).toBe(201);
    // A topic that holds data stores 16 items of 60,000 bytes (960,000 of the 1 MiB).
    const real = newTopic();
    for (let i = 0; i < 16; i++) expect(await post(real, "d".repeat(60_000))).toBe(201);
    // and the total still holds: past what is held, a store is refused
    expect(await post(newTopic(), "e".repeat(60_000))).toBe(201);
    expect(await post(newTopic(), "e".repeat(60_000))).toBe(507);
    await resetTotals();
  });

  it("storage slack is lent, never kept: one key's tiny envelopes to random npubs do not fill a 1 MiB Tally total; a recipient with real mail still stores it", async () => {
    // 1 MiB of rows, and room for the 25 recipients' databases
    await roomFor("tally", MiB + 25 * STORAGE_LIMITS.database_bytes_tally);
    const alice = newUser();
    for (let i = 0; i < 24; i++) {
      const to = newUser();
      expect(
        await deliver(tallyStub(to), JSON.stringify(opaqueEnvelope(alice, to, `t${i}`, { pad: "p".repeat(100) })), alice.hex, `t${i}`),
      ).toBe("stored");
    }
    const bob = newUser();
    for (let i = 0; i < 15; i++) {
      const from = newUser();
      const raw = JSON.stringify(opaqueEnvelope(from, bob, `b${i}`, { pad: "q".repeat(60_000) }));
      expect(await deliver(tallyStub(bob), raw, from.hex, `b${i}`)).toBe("stored");
    }
    await resetTotals();
  });
});
