// A relay process stopping and starting again on the same data directory: killed in the middle of
// traffic (a crash), and stopped by SIGTERM (a clean shutdown). Each test starts relays of its own,
// on the target RELAY_TARGET chooses (workerd serve by default, or wrangler dev).
import { afterEach, describe, expect, it } from "vitest";
import { freePort, relayTarget, startRelay, type RelayProcess } from "../helpers/relay-process";
import { newUser, opaqueEnvelope, rawRegistered, type User } from "../helpers/tally";
import { TestSocket } from "../helpers/socket";
import { DatabaseSync } from "node:sqlite";
import { readdirSync } from "node:fs";
import { codeRoom, codeSecret, newCode } from "../../shared/minca/code";
import { newP256Key } from "../../shared/minca/es256";
import { makeJoin } from "../../shared/minca/room";
import { waitFor } from "../helpers/wait";
import { mkdtempSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";

const target = relayTarget();
const relays: RelayProcess[] = [];
const sockets: TestSocket[] = [];

async function relay(dataDir: string, port?: number): Promise<RelayProcess> {
  const r = await startRelay({ dataDir, port });
  relays.push(r);
  return r;
}

async function registered(r: RelayProcess, user: User): Promise<TestSocket> {
  const s = await rawRegistered(r.url, user);
  sockets.push(s);
  return s;
}

afterEach(async () => {
  for (const s of sockets.splice(0)) s.close();
  for (const r of relays.splice(0)) await r.stop({ kill: true });
});

/** Registers `user` and returns the ids of the envelopes flushed to it, in order. */
async function flushedIds(r: RelayProcess, user: User): Promise<{ queued: number; ids: string[] }> {
  const s = await registered(r, user);
  const reg = s.ofType("registered")[0];
  await s.next("queue_drained", 20_000);
  const ids = s.ofType("peer_envelope").map((e) => e.id as string);
  s.close();
  return { queued: reg.queued, ids };
}

/** A clean stop: `npm start`'s launcher exits 0; wrangler dev ends by the signal (143) itself. */
async function stopCleanly(r: RelayProcess): Promise<void> {
  const code = await r.stop();
  if (target === "workerd") expect(code).toBe(0);
}

describe(`the relay restarted on its data directory (${target})`, () => {
  it("a recipient's queue survives the relay process being killed and restarted", async () => {
    const first = await relay(mkdtempSync(join(tmpdir(), "relay-kill-")));
    const alice = newUser();
    const bob = newUser();
    const a = await registered(first, alice);
    for (const id of ["r1", "r2", "r3"]) a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, id) });
    for (let i = 0; i < 3; i++) expect((await a.next("queued")).status).toBe("stored");
    a.close();
    await first.stop({ kill: true }); // SIGKILL: no clean shutdown
    const second = await relay(first.dataDir, first.port);
    expect((await flushedIds(second, bob)).ids).toEqual(["r1", "r2", "r3"]);
  });

  it("killed in the middle of traffic: every envelope the relay reported stored is still there", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "relay-crash-"));
    const port = await freePort();
    const first = await relay(dataDir, port);

    const senders = Array.from({ length: 4 }, newUser);
    const recipients = Array.from({ length: 4 }, newUser); // never online before the crash: all stored
    const sent = new Map<string, string>(); // id -> recipient npub
    const stored = new Set<string>(); // acknowledged as stored before the kill
    const perSender = 150; // within the per-socket burst: no rate limiting
    const inFlight = 8;

    let killed = false;
    const pumps = senders.map(async (from, i) => {
      const s = await registered(first, from);
      const to = recipients[i];
      let next = 0;
      const pending = new Set<string>();
      s.ws.addEventListener("message", (ev) => {
        const m = JSON.parse(String(ev.data));
        if (m.type === "queued") {
          pending.delete(m.id);
          if (m.status === "stored") stored.add(m.id);
        }
      });
      while (next < perSender && !killed && s.closeCode === undefined) {
        while (pending.size < inFlight && next < perSender) {
          const id = `s${i}-${next++}`;
          pending.add(id);
          sent.set(id, to.npub);
          s.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(from, to, id) });
        }
        await waitFor(() => pending.size < inFlight || killed || s.closeCode !== undefined, { timeout: 20_000, interval: 2 });
      }
    });

    // Kill once about half the traffic is stored, while the pumps are still sending.
    await waitFor(() => stored.size >= (senders.length * perSender) / 2, { timeout: 30_000, what: "half the envelopes stored" });
    const storedBeforeKill = new Set(stored);
    await first.stop({ kill: true });
    killed = true;
    await Promise.all(pumps);
    expect(storedBeforeKill.size).toBeLessThan(senders.length * perSender); // the kill did land mid-traffic

    const second = await relay(dataDir, port);
    let recovered = 0;
    for (const [i, to] of recipients.entries()) {
      const { queued, ids } = await flushedIds(second, to);
      expect(new Set(ids).size).toBe(ids.length); // no envelope twice
      expect(queued).toBe(ids.length);
      for (const id of ids) expect(sent.get(id)).toBe(to.npub); // nothing that was not sent to this user
      const mine = [...storedBeforeKill].filter((id) => id.startsWith(`s${i}-`));
      expect(ids).toEqual(expect.arrayContaining(mine)); // nothing acknowledged is lost
      recovered += ids.length;
    }
    expect(recovered).toBeGreaterThanOrEqual(storedBeforeKill.size);
  });

  it("stopped with SIGTERM twice: queues survive each clean restart", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "relay-restart-"));
    const alice = newUser();
    const bob = newUser();
    let r = await relay(dataDir);
    const a = await registered(r, alice);
    for (let k = 0; k < 5; k++) a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, `m${k}`) });
    await waitFor(() => a.ofType("queued").length === 5, { what: "5 queued" });
    expect(a.ofType("queued").map((q) => q.status)).toEqual(Array(5).fill("stored"));
    await stopCleanly(r);

    r = await relay(dataDir);
    const a2 = await registered(r, alice);
    a2.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "m5") });
    await a2.next("queued");
    await stopCleanly(r);

    r = await relay(dataDir);
    const { ids } = await flushedIds(r, bob);
    expect(ids).toEqual(["m0", "m1", "m2", "m3", "m4", "m5"]);
  });

  it("killed in the middle of posting: every mailbox item the relay answered 201 is still there", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "relay-crash-mailbox-"));
    const port = await freePort();
    const first = await relay(dataDir, port);
    const topic = `crash-test-${Date.now()}-topic`;
    const total = 80; // within the write burst: no 429
    const answered = new Map<number, string>(); // seq -> body, for every 201
    let next = 0;
    let killed = false;
    const post = async (): Promise<void> => {
      while (next < total && !killed) {
        const body = `item-${next++}`;
        try {
          const res = await fetch(`${first.url}/minca/v1/mailbox/${topic}`, { method: "POST", body });
          if (res.status === 201) answered.set(((await res.json()) as { seq: number }).seq, body);
        } catch {
          return; // the relay is gone
        }
      }
    };
    const posters = Array.from({ length: 4 }, post);
    await waitFor(() => answered.size >= total / 2, { timeout: 30_000, what: "half the items stored" });
    const before = new Map(answered);
    await first.stop({ kill: true });
    killed = true;
    await Promise.all(posters);
    expect(before.size).toBeLessThan(total);

    const second = await relay(dataDir, port);
    const page = (await (await fetch(`${second.url}/minca/v1/mailbox/${topic}?after=0&limit=100`)).json()) as {
      items: Array<{ seq: number; blob: string }>;
    };
    const held = new Map(page.items.map((i) => [i.seq, Buffer.from(i.blob, "base64url").toString("utf8")]));
    for (const [seq, body] of before) expect(held.get(seq), `item ${seq}`).toBe(body);
  });
  // A room expires 15 minutes after its first join. Rather than wait, the test stands in for the
  // time passing while the relay is down: it moves the stored expiry of the (killed) relay's room
  // into the past, in the room's own SQLite file. Everything after that is the relay's own doing.
  it.skipIf(target !== "workerd")("room tombstones (expired code-channel rooms) survive a crash", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "relay-crash-"));
    const port = await freePort();
    const room = codeRoom(codeSecret(newCode()));
    const first = await relay(dataDir, port);
    const s = await TestSocket.open(`${first.url.replace(/^http/, "ws")}/minca/v1/rooms/${room}`);
    sockets.push(s);
    const { challenge } = await s.next("challenge");
    s.send(await makeJoin(await newP256Key(), room, challenge));
    await s.next("welcome");
    await first.stop({ kill: true });

    const roomDir = readdirSync(dataDir).find((d) => d.endsWith("-MincaRoom"))!;
    const file = readdirSync(join(dataDir, roomDir)).find((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")!;
    const db = new DatabaseSync(join(dataDir, roomDir, file));
    db.prepare("UPDATE room SET expires_at = ?").run(Date.now() - 1_000);
    db.close();

    // Back up: the room finds its lifetime over, refuses the join (4008) and keeps its tombstone.
    const second = await relay(dataDir, port);
    const refused = await TestSocket.open(`${second.url.replace(/^http/, "ws")}/minca/v1/rooms/${room}`);
    expect(await refused.closed).toBe(4008);
    await second.stop({ kill: true });

    // Killed again and started again: the tombstone is still there.
    const third = await relay(dataDir, port);
    const again = await TestSocket.open(`${third.url.replace(/^http/, "ws")}/minca/v1/rooms/${room}`);
    expect(await again.closed).toBe(4008);
    expect(again.messages.find((m) => m.type === "error")?.code).toBe("room_expired");
  });
});

describe.skipIf(target !== "workerd")("clean shutdown of workerd serve on SIGTERM", () => {
  it("closes every client socket with 1001, refuses none of the acknowledged writes, and exits 0", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "relay-term-"));
    const r = await relay(dataDir);
    const users = [newUser(), newUser(), newUser()];
    const open = await Promise.all(users.map((u) => registered(r, u)));
    const offline = newUser();
    open[0].send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(users[0], offline, "kept") });
    expect((await open[0].next("queued")).status).toBe("stored");

    const t0 = Date.now();
    const code = await r.stop();
    const took = Date.now() - t0;
    expect(code).toBe(0);
    expect(await Promise.all(open.map((s) => s.closed))).toEqual([1001, 1001, 1001]);
    expect(open[0].closeReason).toBe("relay shutting down");
    expect(took).toBeLessThan(5_000); // drained, not waited out to the grace period
    expect(r.output()).toMatch(/closed 3 client socket\(s\)/);

    const again = await relay(dataDir);
    expect((await flushedIds(again, offline)).ids).toEqual(["kept"]);
  });

  it("the admin socket's drain refuses new upgrades with 503 and closes the open sockets", async () => {
    const r = await relay(mkdtempSync(join(tmpdir(), "relay-drain-")));
    const alice = newUser();
    const a = await registered(r, alice);
    const admin = (method: string, path: string) =>
      new Promise<any>((resolve, reject) => {
        const req = request({ socketPath: join(r.runtimeDir, "admin.sock"), method, path }, (res) => {
          let body = "";
          res.on("data", (d) => (body += d));
          res.on("end", () => resolve(JSON.parse(body)));
        });
        req.on("error", reject);
        req.end();
      });
    expect(await admin("GET", "/status")).toEqual({ live_objects: 1, draining: false, crowded: false });
    expect(await admin("POST", "/drain")).toEqual({ objects: 1, sockets: 1 });
    expect(await a.closed).toBe(1001);
    // An upgrade now is answered 503 (node:http, since fetch refuses to send Upgrade).
    const res = await new Promise<{ status: number; retryAfter?: string; body: any }>((resolve, reject) => {
      const req = request(`${r.url}/tally/v1/${alice.npub}`, {
        headers: {
          upgrade: "websocket",
          connection: "upgrade",
          "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
          "sec-websocket-version": "13",
        },
      });
      req.on("response", (resp) => {
        let body = "";
        resp.on("data", (d) => (body += d));
        resp.on("end", () =>
          resolve({ status: resp.statusCode!, retryAfter: resp.headers["retry-after"] as string, body: JSON.parse(body) }),
        );
      });
      req.on("upgrade", () => reject(new Error("upgraded while draining")));
      req.on("error", reject);
      req.end();
    });
    expect(res.status).toBe(503);
    expect(res.retryAfter).toBe("5");
    expect(res.body.error.code).toBe("unavailable");
    expect(await admin("GET", "/status")).toEqual({ live_objects: 0, draining: true, crowded: false });
    // The public listener does not serve the admin entrypoint.
    expect((await fetch(`${r.url}/drain`, { method: "POST" })).status).toBe(404);
  });

  it("a workerd that dies on its own is started again by the launcher: same port, same data, what was stored is there", async () => {
    const r = await relay(mkdtempSync(join(tmpdir(), "relay-die-")));
    const alice = newUser();
    const bob = newUser();
    const a = await registered(r, alice);
    a.send({ type: "queue_peer_envelope", envelope: opaqueEnvelope(alice, bob, "kept-1") });
    expect((await a.next("queued")).status).toBe("stored");
    a.close();
    const before = r.runtimePid()!;
    process.kill(before, "SIGKILL"); // as the runtime's own crash at its open-file limit ends it
    await waitFor(() => /starting workerd again/.test(r.output()), { what: "the launcher to start workerd again", timeout: 30_000 });
    await waitFor(async () => (await fetch(`${r.url}/healthz`).catch(() => null))?.status === 200, {
      what: "/healthz again",
      timeout: 30_000,
    });
    expect(r.runtimePid()).not.toBe(before);
    expect((await flushedIds(r, bob)).ids).toEqual(["kept-1"]);
  });

  it("a workerd that dies more than RELAY_RESTARTS times a minute makes the launcher exit non-zero (a service manager restarts it)", async () => {
    const r = await startRelay({ dataDir: mkdtempSync(join(tmpdir(), "relay-die-")), env: { RELAY_RESTARTS: "1" } });
    relays.push(r);
    process.kill(r.runtimePid()!, "SIGKILL");
    await waitFor(() => /"restarts":1/.test(r.output()), { what: "the first restart to serve", timeout: 30_000 });
    process.kill(r.runtimePid()!, "SIGKILL");
    expect(await r.exited()).not.toBe(0);
    expect(r.output()).toMatch(/died more than 1 times in a minute/);
  });
});
