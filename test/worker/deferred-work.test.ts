// No object keeps a timer after a burst (docs/objects.md, "Deferred work"; durable-objects/base/deferred.ts):
// the work a burst leaves for later (the stats report, a lease's give-back, a Tally sender's share
// written exactly) runs from the object's alarm, a flush interval after the burst, and is right
// also when the object was evicted between the burst and the alarm (its memory gone). The alarm
// is held off explicitly (moved an hour on, as a slow runtime would) so that the eviction comes
// first, then run with runDurableObjectAlarm: no sleeps.
import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { relayStats } from "../../server/relay-objects";
import { ledger } from "../helpers/ledger-totals";
import { newUser, opaqueEnvelope, type User } from "../helpers/tally";
import { deliver, queuedCount, registerDevice, stubOf } from "../helpers/tally-user";
import { waitFor } from "../helpers/wait";
import { base64Encode, randomBytes } from "../../shared/encoding";
import { STATS_LIMITS, STORAGE_LIMITS } from "../../shared/limits";
import { shareAt, shareCapacity, type ShareState } from "../../shared/storage";
import type { StatsSnapshot, Usage } from "../../server/stats";

const FLUSH = STATS_LIMITS.flush_interval_ms;
const HOUR = 3_600_000;

/** The object's alarm, and (when `holdOff`) moved an hour on so that a test decides when it runs. */
const alarmOf = (stub: DurableObjectStub, holdOff = false) =>
  runInDurableObject(stub, async (_o, state) => {
    const at = await state.storage.getAlarm();
    if (holdOff && at !== null) await state.storage.setAlarm(Date.now() + HOUR);
    return at;
  });

/** The usage the object counted and has not reported yet (read without taking it). */
const unreported = (stub: DurableObjectStub) =>
  runInDurableObject(stub, (o) => {
    const u = (o as unknown as { objectUsage: { counts: Usage } }).objectUsage;
    return { ...u.counts };
  });

/** What the stats object counted of the Tally users' usage (its snapshot: the reports written and those merged in memory). */
const tallyUsage = async () => {
  const s = (await relayStats(env).snapshot()) as StatsSnapshot;
  return Object.values(s.usage.TallyUser ?? {}).reduce((a, b) => a + b, 0);
};

/** Bob's lease at the ledger (0: none). */
const leaseAtLedger = async (user: User) => {
  const holder = stubOf(user).id.toString();
  return runInDurableObject(ledger(), (_o, state) => {
    const made = state.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'leases'").toArray().length > 0;
    if (!made) return 0;
    return (
      state.storage.sql.exec<{ bytes: number }>("SELECT bytes FROM leases WHERE kind = 'tally' AND holder = ?", holder).toArray()[0]
        ?.bytes ?? 0
    );
  });
};

const big = (from: User, to: User, id: string) =>
  JSON.stringify(opaqueEnvelope(from, to, id, { ciphertext: base64Encode(randomBytes(24_000)) }));

describe("deferred work runs from the alarm, never from a timer", () => {
  it("after a burst an object holds no timer: its deferred report runs from its alarm, set a flush interval on, and the alarm's own run sets none", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await registerDevice(alice);
    const before = Date.now();
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "one") });
    expect((await a.next("queued")).status).toBe("stored");
    const at = await alarmOf(stubOf(alice), true);
    // The report waits for the alarm (no timer): set within the flush interval of the burst.
    expect(at).not.toBeNull();
    expect(at!).toBeGreaterThanOrEqual(before);
    expect(at!).toBeLessThanOrEqual(Date.now() + FLUSH);
    expect((await unreported(stubOf(alice))).socket_message).toBeGreaterThanOrEqual(2);
    const reported = await tallyUsage();
    expect(await runDurableObjectAlarm(stubOf(alice))).toBe(true);
    // The alarm sent the report (with its own entry), and left no alarm behind: one per burst, never periodic.
    expect(await unreported(stubOf(alice))).toEqual({});
    expect(await tallyUsage()).toBeGreaterThan(reported);
    expect(await alarmOf(stubOf(alice))).toBeNull();
    a.ws.close();
  });

  it("an object evicted between a burst and its alarm: the lease's give-back still runs from the alarm, from what is stored", async () => {
    const alice = newUser();
    const bob = newUser();
    for (let i = 0; i < 4; i++) expect(await deliver(stubOf(bob), big(alice, bob, `e${i}`), alice.hex, `e${i}`)).toBe("stored");
    const leased = await leaseAtLedger(bob);
    expect(leased).toBeGreaterThan(4 * 24_000);
    await runDurableObjectAlarm(stubOf(bob)); // the stores' own deferred work (a report), and its expiry alarm stays
    // The burst: bob's device comes online and the queue is flushed to it (and deleted).
    const b = await registerDevice(bob);
    expect(await queuedCount(stubOf(bob))).toBe(0);
    const at = await alarmOf(stubOf(bob), true);
    expect(at).not.toBeNull();
    expect(at!).toBeLessThanOrEqual(Date.now() + FLUSH);
    b.ws.close();
    await b.closed;
    await evictDurableObject(stubOf(bob));
    expect(await leaseAtLedger(bob)).toBe(leased); // not given back yet
    expect(await runDurableObjectAlarm(stubOf(bob))).toBe(true);
    expect(await leaseAtLedger(bob)).toBeLessThan(leased - 4 * 24_000 + STORAGE_LIMITS.lease_min_bytes);
  });

  it("an object evicted between a burst and its alarm: the sender's share it keeps is never more than what is left of it", async () => {
    const alice = newUser();
    const a = await registerDevice(alice);
    for (let i = 0; i < 5; i++) {
      a.send({
        type: "queue_peer_envelope",
        envelope: opaqueEnvelope(alice, newUser(), `s${i}`, { ciphertext: base64Encode(randomBytes(3_000)) }),
      });
      expect((await a.next("queued")).status).toBe("stored");
    }
    const exact = await runInDurableObject(
      stubOf(alice),
      (o) => (o as unknown as { sending: { share: { state: ShareState } } }).sending.share.state,
    );
    expect(exact.tokens).toBeLessThan(shareCapacity(STORAGE_LIMITS.tally_bytes, STORAGE_LIMITS.sender_share));
    await alarmOf(stubOf(alice), true);
    a.ws.close();
    await a.closed;
    await evictDurableObject(stubOf(alice));
    const kept = await runInDurableObject(stubOf(alice), (_o, state) => {
      const [tokens, at] = state.storage.sql
        .exec<{ value: string }>("SELECT value FROM meta WHERE key = 'sender_share'")
        .one()
        .value.split(" ")
        .map(Number);
      return { tokens, at };
    });
    const capacity = shareCapacity(STORAGE_LIMITS.tally_bytes, STORAGE_LIMITS.sender_share);
    const period = STORAGE_LIMITS.share_period_seconds * 1000;
    const now = Date.now();
    expect(shareAt(kept, capacity, period, now).tokens).toBeLessThanOrEqual(shareAt(exact, capacity, period, now).tokens);
    // and at most the part written ahead less than the exact share (the safe side, by a bounded amount)
    expect(shareAt(kept, capacity, period, now).tokens).toBeGreaterThanOrEqual(
      shareAt(exact, capacity, period, now).tokens - Math.floor(capacity * STORAGE_LIMITS.sender_share_written_ahead) - 1,
    );
  });

  it("an object that holds nothing reports what it counted when a socket closes, within the flush interval too (often its last entry)", async () => {
    const alice = newUser();
    const bob = newUser();
    const b = await registerDevice(bob); // its report at the end of this entry: none ran before
    // Envelopes handed over within the interval: counted, and carried to the next entry.
    for (let i = 0; i < 3; i++)
      expect(await deliver(stubOf(bob), JSON.stringify(opaqueEnvelope(alice, bob, `c${i}`)), alice.hex, `c${i}`)).toBe("stored");
    expect(await queuedCount(stubOf(bob))).toBe(0); // delivered to the device: bob holds nothing
    expect((await unreported(stubOf(bob))).rpc).toBeGreaterThanOrEqual(3);
    b.close();
    await waitFor(async () => (await unreported(stubOf(bob))).rpc === undefined, { what: "the close's report" });
  });

  it("a recipient that holds no storage reports a burst's counts after it: the sender's alarm asks it to (it has no alarm of its own)", async () => {
    const alice = newUser();
    const bob = newUser();
    const b = await registerDevice(bob);
    const a = await registerDevice(alice);
    for (let i = 0; i < 3; i++) {
      a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, `p${i}`) });
      await a.next("queued");
    }
    await waitFor(() => b.ofType("peer_envelope").length === 3, { what: "bob's device has the envelopes" });
    expect(await queuedCount(stubOf(bob))).toBe(0); // bob holds nothing: no alarm
    expect(await alarmOf(stubOf(bob))).toBeNull();
    expect((await unreported(stubOf(bob))).rpc).toBeGreaterThanOrEqual(1); // the burst's last calls wait
    await alarmOf(stubOf(alice), true); // held off: this test runs it
    await runDurableObjectAlarm(stubOf(alice));
    await waitFor(async () => (await unreported(stubOf(bob))).rpc === undefined, { what: "bob's report, asked for by alice's alarm" });
    a.close();
    b.close();
  });
});
