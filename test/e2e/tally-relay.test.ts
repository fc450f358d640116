// The relay's own rules (docs/hostile.md and docs/tally.md), spoken by raw WebSockets to the running relay.
import { describe, expect, inject, it } from "vitest";
import { makeAuthEvent } from "../../shared/tally/auth";
import { TALLY_LIMITS } from "../../shared/limits";
import { TestSocket } from "../helpers/socket";
import { newUser, opaqueEnvelope, rawRegistered, wsBase } from "../helpers/tally";
import { waitFor } from "../helpers/wait";

const relay = inject("relayUrl");
const ws = wsBase(relay);

async function openFor(npub: string) {
  return TestSocket.open(`${ws}/tally/v1/${npub}`);
}

describe("HTTP surface", () => {
  it("GET / with Accept: application/json is the information document with every limit", async () => {
    const res = await fetch(`${relay}/`, { headers: { accept: "application/json" } });
    expect(res.status).toBe(200);
    const info = (await res.json()) as any;
    expect(info).toMatchObject({ software: "edge-relay", protocols: { tally: { endpoint: "/tally/v1/<npub>" } } });
    expect(info.limits.tally).toEqual(TALLY_LIMITS);
  });

  it("GET /healthz answers 200 ok", async () => {
    const res = await fetch(`${relay}/healthz`);
    expect([res.status, await res.text()]).toEqual([200, "ok"]);
  });

  it("a bad npub is HTTP 400 with the JSON error shape", async () => {
    const res = await fetch(`${relay}/tally/v1/npub1notvalid`);
    expect(res.status).toBe(400);
    expect((await res.json()) as any).toEqual({ error: { code: "bad_request", message: expect.any(String) } });
  });

  it("a request without Upgrade: websocket is HTTP 426", async () => {
    const res = await fetch(`${relay}/tally/v1/${newUser().npub}`);
    expect(res.status).toBe(426);
    expect(((await res.json()) as any).error.code).toBe("upgrade_required");
  });

  it("an unknown path is a JSON 404", async () => {
    const res = await fetch(`${relay}/nope`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.code).toBe("not_found");
  });
});

describe("register (profile of the Tally protocol §13.9)", () => {
  it("the relay opens with a 64-hex challenge, and a signed kind-22242 event registers a fresh device", async () => {
    const user = newUser();
    const s = await openFor(user.npub);
    const { challenge } = await s.next("challenge");
    expect(challenge).toMatch(/^[0-9a-f]{64}$/);
    s.send({ type: "register", user_id: user.npub, auth: makeAuthEvent({ secretKey: user.secretKey, challenge, relayUrl: ws }) });
    const reg = await s.next("registered");
    expect(reg).toEqual({ type: "registered", user_id: user.npub, device_id: expect.stringMatching(/^[0-9a-f]{16}$/), queued: 0 });
    await s.next("queue_drained");
    s.close();
  });

  it("a register with a bad signature is refused with auth_failed and close 4001", async () => {
    const user = newUser();
    const s = await openFor(user.npub);
    const { challenge } = await s.next("challenge");
    const auth = makeAuthEvent({ secretKey: user.secretKey, challenge, relayUrl: ws });
    auth.sig = auth.sig.slice(0, -2) + (auth.sig.endsWith("00") ? "01" : "00");
    s.send({ type: "register", user_id: user.npub, auth });
    expect((await s.next("error")).code).toBe("auth_failed");
    expect(await s.closed).toBe(4001);
  });

  it("a replayed register (an auth event from an earlier connection) is refused", async () => {
    const user = newUser();
    const first = await openFor(user.npub);
    const { challenge } = await first.next("challenge");
    const auth = makeAuthEvent({ secretKey: user.secretKey, challenge, relayUrl: ws });
    first.send({ type: "register", user_id: user.npub, auth });
    await first.next("registered");
    const second = await openFor(user.npub);
    await second.next("challenge");
    second.send({ type: "register", user_id: user.npub, auth });
    expect((await second.next("error")).code).toBe("auth_failed");
    expect(await second.closed).toBe(4001);
    first.close();
  });

  it("a register signed by another key, or for another user than the URL's, is refused", async () => {
    const user = newUser();
    const mallory = newUser();
    const s = await openFor(user.npub);
    const { challenge } = await s.next("challenge");
    s.send({ type: "register", user_id: user.npub, auth: makeAuthEvent({ secretKey: mallory.secretKey, challenge, relayUrl: ws }) });
    expect(await s.closed).toBe(4001);
    const t = await openFor(user.npub);
    const c2 = (await t.next("challenge")).challenge;
    t.send({ type: "register", user_id: mallory.npub, auth: makeAuthEvent({ secretKey: mallory.secretKey, challenge: c2, relayUrl: ws }) });
    expect(await t.closed).toBe(4001);
  });

  it("a stale auth event (created_at more than 600 s away) is refused", async () => {
    const user = newUser();
    const s = await openFor(user.npub);
    const { challenge } = await s.next("challenge");
    const createdAt = Math.floor(Date.now() / 1000) - 601;
    s.send({
      type: "register",
      user_id: user.npub,
      auth: makeAuthEvent({ secretKey: user.secretKey, challenge, relayUrl: ws, createdAt }),
    });
    expect(await s.closed).toBe(4001);
  });

  it("an auth event naming another relay is refused", async () => {
    const user = newUser();
    const s = await openFor(user.npub);
    const { challenge } = await s.next("challenge");
    s.send({
      type: "register",
      user_id: user.npub,
      auth: makeAuthEvent({ secretKey: user.secretKey, challenge, relayUrl: "wss://other.example" }),
    });
    expect(await s.closed).toBe(4001);
  });

  it("before registered only ping is answered", async () => {
    const user = newUser();
    const s = await openFor(user.npub);
    await s.next("challenge");
    s.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(user, newUser(), "x") });
    s.send({ type: "connect_peer", peer_user_id: newUser().npub });
    s.send({ type: "ping" });
    await s.next("pong"); // frames on one socket are handled in order: the two before it are done
    expect(s.messages.map((m) => m.type)).toEqual(["challenge", "pong"]);
    s.close();
  });

  it(`at most ${TALLY_LIMITS.max_devices_per_user} devices per user: one more is refused with too_many_devices`, async () => {
    const user = newUser();
    // one after another: more than common.max_unauthenticated_sockets_per_object at once would crowd the oldest out
    const devices = [];
    for (let i = 0; i < TALLY_LIMITS.max_devices_per_user; i++) devices.push(await rawRegistered(relay, user));
    const s = await openFor(user.npub);
    const { challenge } = await s.next("challenge");
    s.send({ type: "register", user_id: user.npub, auth: makeAuthEvent({ secretKey: user.secretKey, challenge, relayUrl: ws }) });
    expect((await s.next("error")).code).toBe("too_many_devices");
    expect(await s.closed).toBe(1008);
    for (const d of devices) d.close();
  });
});

describe("frames (docs/hostile.md)", () => {
  it("a frame that is not JSON, not an object, or fails its schema gets invalid_message and the connection stays open", async () => {
    const user = newUser();
    const s = await rawRegistered(relay, user);
    s.send("{not json");
    expect((await s.next("error")).code).toBe("invalid_message");
    s.send("[1,2]");
    expect((await s.next("error")).code).toBe("invalid_message");
    s.send({ type: "connect_peer", peer_user_id: "npub1bad", id: "m1" });
    expect(await s.next("error")).toMatchObject({ code: "invalid_message", id: "m1" });
    s.send({ type: "ping" });
    await s.next("pong");
    expect(s.closeCode).toBeUndefined();
    s.close();
  });

  it("an unknown type gets unknown_type", async () => {
    const s = await rawRegistered(relay, newUser());
    s.send({ type: "subscribe", id: "q" });
    expect(await s.next("error")).toMatchObject({ code: "unknown_type", id: "q" });
    s.close();
  });

  it("a frame over the size bound closes the connection with 1009", async () => {
    const s = await rawRegistered(relay, newUser());
    s.send(JSON.stringify({ type: "ping", pad: "x".repeat(TALLY_LIMITS.max_frame_bytes) }));
    expect(await s.closed).toBe(1009);
  });

  it("ping is answered with pong", async () => {
    const s = await openFor(newUser().npub);
    s.send('{"type":"ping"}');
    expect(await s.next("pong")).toEqual({ type: "pong" });
    s.close();
  });
});

describe("envelopes (the Tally protocol §6.2, 6.4, 8.2)", () => {
  it("a spoofed from_user_id is refused with forbidden_sender and nothing is delivered", async () => {
    const alice = newUser();
    const bob = newUser();
    const carol = newUser();
    const a = await rawRegistered(relay, alice);
    const b = await rawRegistered(relay, bob);
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(carol, bob, "spoof-1") });
    expect(await a.next("error")).toMatchObject({ code: "forbidden_sender", id: "spoof-1" });
    // An envelope sent after it reaches bob in order: had the spoof been delivered, it came first.
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "after-spoof") });
    await b.next("peer_envelope");
    expect(b.ofType("peer_envelope").map((e) => e.id)).toEqual(["after-spoof"]);
    a.close();
    b.close();
  });

  it("6.2 the relay forwards an envelope unmodified: unknown fields and their exact bytes are kept", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await rawRegistered(relay, alice);
    const b = await rawRegistered(relay, bob);
    const env = opaqueEnvelope(alice, bob, "exact-1");
    const rawEnv = JSON.stringify(env).replace(/}$/, ',"x_big":12345678901234567890123,"x_float":1.50,"x_esc":"\\u00e9"}');
    const received: string[] = [];
    b.ws.addEventListener("message", (ev) => {
      if (String(ev.data).includes('"exact-1"')) received.push(String(ev.data));
    });
    a.send(`{"type":"queue_peer_envelope","envelope":${rawEnv}}`);
    expect(await a.next("queued")).toMatchObject({ id: "exact-1", status: "stored" }); // delivered; "stored" to a stranger
    await waitFor(() => received.length > 0, { what: "delivery" });
    expect(received[0]).toBe(rawEnv);
    a.close();
    b.close();
  });

  it("6.2 a stored envelope is flushed as it was sent, with only the queued_at hint added", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await rawRegistered(relay, alice);
    const env = opaqueEnvelope(alice, bob, "stored-1", { x_future: { nested: [1, 2] } });
    a.send({ type: "queue_peer_envelope", envelope: env });
    expect((await a.next("queued")).status).toBe("stored");
    const b = await rawRegistered(relay, bob);
    const got = await b.next("peer_envelope");
    const { queued_at, ...rest } = got;
    expect(rest).toEqual(env);
    expect(new Date(queued_at).toISOString()).toBe(queued_at);
    await b.next("queue_drained");
    a.close();
    b.close();
  });

  it("an envelope missing a required field is refused with invalid_message naming it", async () => {
    const alice = newUser();
    const a = await rawRegistered(relay, alice);
    const { ciphertext: _c, ...env } = opaqueEnvelope(alice, newUser(), "nocipher");
    a.send({ type: "queue_peer_envelope", envelope: env });
    const err = await a.next("error");
    expect(err).toMatchObject({ code: "invalid_message", id: "nocipher" });
    expect(err.message).toContain("ciphertext");
    a.close();
  });

  it("an envelope over the size bound is refused with envelope_too_large", async () => {
    const alice = newUser();
    const a = await rawRegistered(relay, alice);
    const big = "A".repeat(TALLY_LIMITS.max_envelope_bytes);
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, newUser(), "big", { ciphertext: big }) });
    expect(await a.next("error")).toMatchObject({ code: "envelope_too_large", id: "big" });
    a.close();
  });

  it("8.2 re-queuing is idempotent: the same (from, id) takes one slot", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await rawRegistered(relay, alice);
    const env = opaqueEnvelope(alice, bob, "same-id");
    for (let i = 0; i < 3; i++) {
      a.send({ type: "queue_peer_envelope", envelope: env });
      await a.next("queued");
    }
    const b = await rawRegistered(relay, bob);
    await b.next("queue_drained");
    expect(b.ofType("peer_envelope").map((e) => e.id)).toEqual(["same-id"]);
    expect(b.ofType("registered")[0].queued).toBe(1);
    a.close();
    b.close();
  });

  it("6.4 strangers together hold at most their share of a queue (tally.queue_strangers_share): the newest strangers' envelopes are kept, so fresh keys never keep a new correspondent out (docs/tally.md)", async () => {
    const bob = newUser();
    const senders = Array.from({ length: Math.ceil((TALLY_LIMITS.queue_max_envelopes + 5) / TALLY_LIMITS.queue_max_per_sender) }, newUser);
    const sockets = await Promise.all(senders.map((u) => rawRegistered(relay, u)));
    let n = 0;
    const total = TALLY_LIMITS.queue_max_envelopes + 5;
    const per = Math.ceil(total / senders.length);
    // Send in order, sender by sender, so "oldest" is the first ones sent.
    for (let si = 0; si < senders.length && n < total; si++) {
      const s = sockets[si];
      const batch: string[] = [];
      for (let k = 0; k < per && n < total; k++, n++) batch.push(`e${String(n).padStart(5, "0")}`);
      for (const id of batch) s.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(senders[si], bob, id) });
      await waitFor(() => s.ofType("queued").length === batch.length, { what: "queued", timeout: 30_000 });
    }
    // None of them is bob's contact: every one is stored, strangers' oldest making room past their share.
    for (const s of sockets) expect(s.ofType("queued").every((q) => q.status === "stored")).toBe(true);
    const b = await rawRegistered(relay, bob);
    await b.next("queue_drained", 30_000);
    const ids = b.ofType("peer_envelope").map((e) => e.id);
    const sent = Array.from({ length: total }, (_, i) => `e${String(i).padStart(5, "0")}`);
    expect(ids).toEqual(sent.slice(-TALLY_LIMITS.queue_max_envelopes * TALLY_LIMITS.queue_strangers_share));
    for (const s of [...sockets, b]) s.close();
  });

  it(`6.4 one sender holds at most ${TALLY_LIMITS.queue_max_per_sender} envelopes of a queue: its own oldest go first`, async () => {
    const alice = newUser();
    const carol = newUser();
    const bob = newUser();
    const c = await rawRegistered(relay, carol);
    c.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(carol, bob, "carol-1") });
    await c.next("queued");
    const a = await rawRegistered(relay, alice);
    const count = TALLY_LIMITS.queue_max_per_sender + 3;
    for (let i = 0; i < count; i++) a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, `a${i}`) });
    await waitFor(() => a.ofType("queued").length === count, { what: "queued", timeout: 30_000 });
    const b = await rawRegistered(relay, bob);
    await b.next("queue_drained");
    const ids = b.ofType("peer_envelope").map((e) => e.id);
    expect(ids[0]).toBe("carol-1"); // another sender's envelope survives
    expect(ids.length).toBe(1 + TALLY_LIMITS.queue_max_per_sender);
    expect(ids[1]).toBe("a3");
    for (const s of [a, b, c]) s.close();
  });
});

describe("delivery acks (profile)", () => {
  it("a connection cut mid-flush loses nothing: unacked envelopes come again on the next register", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await rawRegistered(relay, alice);
    const ids = Array.from({ length: 40 }, (_, i) => `m${i}`);
    for (const id of ids) a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, id) });
    await waitFor(() => a.ofType("queued").length === ids.length, { what: "queued" });
    // First connection acks the first five, then breaks.
    const b1 = await rawRegistered(relay, bob, { acks: true });
    for (let i = 0; i < 5; i++) {
      const e = await b1.next("peer_envelope");
      b1.send({ type: "ack", id: e.id, from_user_id: e.from_user_id });
    }
    b1.send({ type: "ping" }); // answered after the acks before it
    await b1.next("pong");
    b1.close(4000);
    await b1.closed;
    const b2 = await rawRegistered(relay, bob, { acks: true });
    await b2.next("queue_drained");
    expect(b2.ofType("registered")[0].queued).toBe(35);
    expect(b2.ofType("peer_envelope").map((e) => e.id)).toEqual(ids.slice(5));
    a.close();
    b2.close();
  });

  it("with an acking device online, an envelope is stored before it is pushed and kept until acked", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await rawRegistered(relay, alice);
    const b1 = await rawRegistered(relay, bob, { acks: true });
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "live-1") });
    expect((await a.next("queued")).status).toBe("stored"); // pushed too; "stored" to a stranger
    const e = await b1.next("peer_envelope");
    expect(e.queued_at).toEqual(expect.any(String));
    b1.close(); // never acked
    await b1.closed;
    const b2 = await rawRegistered(relay, bob, { acks: true });
    expect((await b2.next("peer_envelope")).id).toBe("live-1");
    b2.send({ type: "ack", id: "live-1", from_user_id: alice.npub });
    b2.send({ type: "ping" }); // answered after the ack before it
    await b2.next("pong");
    b2.close();
    const b3 = await rawRegistered(relay, bob, { acks: true });
    await b3.next("queue_drained");
    expect(b3.ofType("peer_envelope")).toEqual([]);
    a.close();
    b3.close();
  });

  it("without acks, a flushed envelope is removed after the push (the Tally protocol §6.2 step 3)", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await rawRegistered(relay, alice);
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "once") });
    await a.next("queued");
    const b1 = await rawRegistered(relay, bob);
    await b1.next("queue_drained");
    expect(b1.ofType("peer_envelope").map((e) => e.id)).toEqual(["once"]);
    b1.close();
    const b2 = await rawRegistered(relay, bob);
    await b2.next("queue_drained");
    expect(b2.ofType("registered")[0].queued).toBe(0);
    a.close();
    b2.close();
  });
});

describe("signaling bounds", () => {
  it("a webrtc_signal over 16 KiB is refused with signal_too_large", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await rawRegistered(relay, alice);
    const b = await rawRegistered(relay, bob);
    a.send({ type: "webrtc_signal", peer_user_id: bob.npub, signal: { sdp: "x".repeat(TALLY_LIMITS.max_signal_bytes) } });
    expect((await a.next("error")).code).toBe("signal_too_large");
    a.close();
    b.close();
  });

  it("a webrtc_signal to a user with no online device gets peer_unavailable", async () => {
    const a = await rawRegistered(relay, newUser());
    a.send({ type: "webrtc_signal", peer_user_id: newUser().npub, signal: { type: "offer" } });
    expect((await a.next("error")).code).toBe("peer_unavailable");
    a.close();
  });

  it("without peer_device_id a signal goes to the peer's only device (between users with an envelope exchange)", async () => {
    const alice = newUser();
    const bob = newUser();
    const a = await rawRegistered(relay, alice);
    const b = await rawRegistered(relay, bob);
    const aReg = a.ofType("registered")[0];
    // Signals, like introductions, go only between users with an envelope exchange (docs/tally.md).
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "hello") });
    await a.next("queued");
    b.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(bob, alice, "receipt") });
    await b.next("queued");
    a.send({ type: "webrtc_signal", peer_user_id: bob.npub, signal: { candidate: "c1" } });
    expect(await b.next("webrtc_signal")).toEqual({
      type: "webrtc_signal",
      peer_user_id: alice.npub,
      peer_device_id: aReg.device_id,
      signal: { candidate: "c1" },
    });
    a.close();
    b.close();
  });
});

describe("rate limits (docs/hostile.md)", () => {
  it("a socket that floods gets rate_limited errors and is closed with 4029", async () => {
    const s = await rawRegistered(relay, newUser());
    for (let i = 0; i < 600; i++) s.send({ type: "connect_peer", peer_user_id: "bad" });
    await waitFor(() => s.ofType("error").some((e) => e.code === "rate_limited"), { what: "rate_limited" });
    expect(await s.closed).toBe(4029);
  });
});
