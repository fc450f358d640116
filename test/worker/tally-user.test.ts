// The Tally user object inside workerd: what survives eviction and hibernation, and what the
// alarm does (queue expiry) and the authentication timeout.
import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { runDeferred } from "../helpers/deferred";
import { describe, expect, it } from "vitest";
import { TALLY_LIMITS } from "../../shared/limits";
import { MIGRATIONS } from "../../migrations/index";
import { newUser, opaqueEnvelope, type User } from "../helpers/tally";
import { connectTo, deliver, queuedCount, registerDevice } from "../helpers/tally-user";
import { waitFor } from "../helpers/wait";
import type { TallyUser } from "../../durable-objects/tally/tally-user";
import type { TestTallyUser } from "./test-objects";

const _RELAY = "ws://relay.test";

const connect = connectTo;
const register = registerDevice;

function stubOf(user: User): DurableObjectStub<TallyUser> {
  return env.TALLY_USER.get(env.TALLY_USER.idFromName(user.hex));
}

describe("Tally user object in workerd", () => {
  it("a recipient's queue survives the object's eviction", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await register(alice);
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "kept") });
    expect((await a.next("queued")).status).toBe("stored");
    await evictDurableObject(stubOf(bob));
    const b = await register(bob);
    expect(b.ofType("peer_envelope").map((e) => e.id)).toEqual(["kept"]);
  });

  it("the object knows its own user after a cold start (identity is stored, not in memory)", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await register(alice);
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "x") });
    await a.next("queued");
    await evictDurableObject(stubOf(bob));
    const hex = await runInDurableObject(
      stubOf(bob),
      (_o, state) => state.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'user_hex'").one().value,
    );
    expect(hex).toBe(bob.hex);
  });

  it("a registered device survives hibernation: its socket keeps its device id and still receives", async () => {
    const alice = newUser();
    const bob = newUser();
    const b = await register(bob);
    const deviceId = b.ofType("registered")[0].device_id;
    await evictDurableObject(stubOf(bob), { webSockets: "hibernate" });
    const a = await register(alice);
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "after-hibernation") });
    expect((await a.next("queued")).status).toBe("stored"); // delivered; "stored" to a stranger
    expect((await b.next("peer_envelope")).id).toBe("after-hibernation");
    // Signaling still names the same device (after an exchange both ways, which connect_peer asks for).
    b.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(bob, alice, "back") });
    await b.next("queued");
    a.send({ type: "connect_peer", peer_user_id: bob.npub });
    expect((await a.next("peer_connect")).peer_device_id).toBe(deviceId);
  });

  it(`stored envelopes expire after ${TALLY_LIMITS.queue_ttl_days} days: the alarm removes them`, async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await register(alice);
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "old") });
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "new") });
    await a.next("queued");
    await a.next("queued");
    const stub = stubOf(bob);
    await runDeferred(stub); // the stores' report; the expiry's alarm stays
    const alarmAt = await runInDurableObject(stub, async (_o, state) => {
      const row = state.storage.sql.exec<{ expires_at: number }>("SELECT expires_at FROM queue WHERE id = 'old'").one();
      state.storage.sql.exec("UPDATE queue SET expires_at = ? WHERE id = 'old'", Date.now() - 1);
      return { alarm: await state.storage.getAlarm(), expires: row.expires_at };
    });
    // The alarm was set for the first expiry, 30 days out.
    expect(alarmAt.alarm).toBe(alarmAt.expires);
    expect(alarmAt.expires - Date.now()).toBeGreaterThan((TALLY_LIMITS.queue_ttl_days * 86_400 - 60) * 1000);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await queuedCount(stub)).toBe(1);
    const b = await register(bob);
    expect(b.ofType("peer_envelope").map((e) => e.id)).toEqual(["new"]);
  });

  it("envelopes sent back to back to one user arrive in the order sent, each answered queued", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await register(alice);
    const b = await register(bob);
    const ids = Array.from({ length: 60 }, (_, k) => `m${k}`);
    for (const id of ids) a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, id) });
    for (const id of ids) expect(await a.next("queued")).toMatchObject({ id, to_user_id: bob.npub, status: "stored" }); // to a stranger
    await b.next("peer_envelope");
    await waitFor(() => b.ofType("peer_envelope").length === ids.length, { what: "every envelope" });
    expect(b.ofType("peer_envelope").map((e) => e.id)).toEqual(ids);
  });

  const queueRows = (stub: DurableObjectStub<TallyUser>) =>
    runInDurableObject(stub, (_o, state) =>
      state.storage.sql
        .exec<{ from_hex: string; id: string; bytes: number }>("SELECT from_hex, id, bytes FROM queue ORDER BY seq")
        .toArray(),
    );

  it(`one sender evicts no one: a sender's share of a queue is at most ${TALLY_LIMITS.queue_max_bytes_per_sender} bytes (its own oldest go), and others' envelopes stay`, async () => {
    const alice = newUser();
    const carol = newUser();
    const bob = newUser();
    const stub = stubOf(bob);
    for (const id of ["c1", "c2", "c3"])
      expect(await deliver(stub, JSON.stringify(opaqueEnvelope(carol, bob, id)), carol.hex, id)).toBe("stored");
    const pad = "x".repeat(TALLY_LIMITS.max_envelope_bytes - 1_000);
    const total = Math.ceil(TALLY_LIMITS.queue_max_bytes / pad.length) + 3; // enough to fill the whole queue alone
    for (let i = 0; i < total; i++) {
      const raw = JSON.stringify(opaqueEnvelope(alice, bob, `a${i}`, { pad }));
      expect(await deliver(stub, raw, alice.hex, `a${i}`)).toBe("stored");
    }
    const rows = await queueRows(stub);
    expect(rows.filter((r) => r.from_hex === carol.hex).map((r) => r.id)).toEqual(["c1", "c2", "c3"]);
    const mine = rows.filter((r) => r.from_hex === alice.hex);
    expect(mine.reduce((n, r) => n + r.bytes, 0)).toBeLessThanOrEqual(TALLY_LIMITS.queue_max_bytes_per_sender);
    const kept = Math.floor(TALLY_LIMITS.queue_max_bytes_per_sender / mine[0].bytes);
    expect(mine.map((r) => r.id)).toEqual(Array.from({ length: kept }, (_, k) => `a${total - kept + k}`));
  });

  it("a socket that does not register within 10 s is closed with 4001 by the auth timer", async () => {
    const bob = newUser();
    const s = await connect(bob);
    await s.next("challenge");
    const stub = stubOf(bob);
    expect(await runInDurableObject(stub, (o: TestTallyUser) => o.closeUnauthenticated(Date.now() + 9_000))).toBe(0);
    expect(await runInDurableObject(stub, (o: TestTallyUser) => o.closeUnauthenticated(Date.now() + 11_000))).toBe(1);
    expect(await s.closed).toBe(4001);
    expect(s.ofType("error")[0].code).toBe("auth_failed");
  });

  /** Marks a device of the user as last heard from just past the idle bound (its last ping too: it never pinged). */
  async function makeSilent(user: User, deviceId: string): Promise<void> {
    await runInDurableObject(stubOf(user), (o, state) => {
      for (const ws of state.getWebSockets()) {
        const att = ws.deserializeAttachment();
        const past = Date.now() - TALLY_LIMITS.idle_timeout_seconds * 1000 - 1;
        if (att.deviceId === deviceId)
          (o as unknown as { setAttachment(w: WebSocket, a: unknown): void }).setAttachment(ws, { ...att, openedAt: past, seenAt: past });
      }
    });
  }

  it(`idle bound, read lazily: a delivery finds a device silent past ${TALLY_LIMITS.idle_timeout_seconds} s offline (closed 4408, departure told); a device that pings stays`, async () => {
    const alice = newUser();
    const bob = newUser();
    const quiet = await register(bob);
    const busy = await register(bob);
    const quietId = quiet.ofType("registered")[0].device_id;
    await makeSilent(bob, quietId);
    busy.send({ type: "ping" });
    await busy.next("pong");
    // No alarm does it: the delivery reads the silence.
    expect(await runInDurableObject(stubOf(bob), (_o, state) => state.storage.getAlarm())).toBeNull();
    // Alice is a stranger to Bob: her answer is `stored` whether or not a device took it (presence is not told to strangers).
    expect(await deliver(stubOf(bob), JSON.stringify(opaqueEnvelope(alice, bob, "to-busy")), alice.hex, "to-busy")).toBe("stored");
    expect(await quiet.closed).toBe(4408);
    expect(quiet.ofType("peer_envelope")).toEqual([]);
    expect((await busy.next("peer_envelope")).id).toBe("to-busy");
    expect((await busy.next("peer_disconnect")).peer_device_id).toBe(quietId);
    busy.send({ type: "ping" });
    await busy.next("pong");
  });

  it("idle bound, read lazily: a user whose only device went silent gets its envelope stored, and the device is closed 4408", async () => {
    const alice = newUser();
    const bob = newUser();
    const quiet = await register(bob, true);
    await makeSilent(bob, quiet.ofType("registered")[0].device_id);
    expect(await deliver(stubOf(bob), JSON.stringify(opaqueEnvelope(alice, bob, "kept")), alice.hex, "kept")).toBe("stored");
    expect(await quiet.closed).toBe(4408);
    expect(quiet.ofType("peer_envelope")).toEqual([]);
    expect(await queuedCount(stubOf(bob))).toBe(1);
    const back = await register(bob, true);
    expect(back.ofType("peer_envelope").map((e) => e.id)).toEqual(["kept"]);
  });

  it("idle bound, read lazily: a silent device neither counts toward the device bound nor is introduced (presence)", async () => {
    const bob = newUser();
    const devices = [];
    for (let i = 0; i < TALLY_LIMITS.max_devices_per_user; i++) devices.push(await register(bob));
    const silentId = devices[0].ofType("registered")[0].device_id;
    await makeSilent(bob, silentId);
    // The bound reads the silence: the silent device goes, the new one registers.
    const fresh = await register(bob);
    expect(await devices[0].closed).toBe(4408);
    expect(fresh.ofType("peer_connect").map((m) => m.peer_device_id)).not.toContain(silentId);
    expect(fresh.ofType("peer_connect")).toHaveLength(TALLY_LIMITS.max_devices_per_user - 1);
  });

  it("idle costs nothing: a registered device that pings sets no alarm on its user's object", async () => {
    const bob = newUser();
    const b = await register(bob);
    for (let i = 0; i < 3; i++) {
      b.send({ type: "ping" });
      await b.next("pong");
    }
    expect(await runInDurableObject(stubOf(bob), (_o, state) => state.storage.getAlarm())).toBeNull();
    expect(await runDurableObjectAlarm(stubOf(bob))).toBe(false);
  });

  it("connect_peer is answered only for users with an envelope exchange with the asker (and own devices)", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await register(alice);
    const b = await register(bob);
    a.send({ type: "connect_peer", peer_user_id: bob.npub });
    // No exchange yet: no answer at all, as if bob were offline; a ping after it comes back first.
    a.send({ type: "ping" });
    await a.next("pong");
    expect(a.ofType("peer_connect")).toEqual([]);
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "one-way") });
    await a.next("queued");
    a.send({ type: "connect_peer", peer_user_id: bob.npub });
    a.send({ type: "ping" });
    await a.next("pong");
    expect(a.ofType("peer_connect")).toEqual([]); // one way is not an exchange
    b.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(bob, alice, "reply") });
    await b.next("queued");
    a.send({ type: "connect_peer", peer_user_id: bob.npub });
    expect((await a.next("peer_connect")).peer_user_id).toBe(bob.npub);
  });

  it("migrations are recorded in the object's own SQLite and applied once", async () => {
    const alice = newUser();
    const bob = newUser();
    const stub = stubOf(bob);
    await deliver(stub, JSON.stringify(opaqueEnvelope(alice, bob, "m")), alice.hex, "m");
    await evictDurableObject(stub);
    await deliver(stub, JSON.stringify(opaqueEnvelope(alice, bob, "n")), alice.hex, "n");
    await evictDurableObject(stub);
    const names = await runInDurableObject(stub, (_o, state) =>
      state.storage.sql
        .exec<{ name: string }>("SELECT name FROM _migrations ORDER BY name")
        .toArray()
        .map((r) => r.name),
    );
    // a fresh object records the class's last migration alone: every one before it is applied with it
    expect(names).toEqual([MIGRATIONS.TallyUser[MIGRATIONS.TallyUser.length - 1].name]);
  });
});
