// Out of resources, refuse; never stop (docs/operating.md, "Open files"): a relay started under a
// low open-file limit, asked for more devices than it allows, refuses the ones it cannot take
// (503 unavailable with Retry-After where the runtime can still answer, never a 500; a connection
// the runtime cannot even accept is reset by it), keeps the devices it holds (they still ping),
// answers /healthz again once the burst's objects are evicted, and takes new devices again.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { makeAuthEvent } from "../../shared/tally/auth";
import { newUser, type User } from "../helpers/tally";
import { startRelay, type RelayProcess } from "../helpers/relay-process";
import { waitFor } from "../helpers/wait";

const OPEN_FILES = 1024;
const DEVICES = 1500;
const BATCH = 100;

let relay: RelayProcess;
let launcherExited = false;

beforeAll(async () => {
  relay = await startRelay({ openFiles: OPEN_FILES });
  void relay.exited().then(() => (launcherExited = true));
});
afterAll(async () => {
  await relay?.stop();
});

type Outcome = { ok: true; ws: WebSocket } | { ok: false; status?: number; retryAfter?: string; error?: string };

/** One device: upgrade, challenge, register; the registered socket, or how it was refused. */
function register(user: User): Promise<Outcome> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${relay.wsUrl}/tally/v1/${user.npub}`, { perMessageDeflate: false, handshakeTimeout: 20_000 });
    const done = (o: Outcome) => {
      clearTimeout(timer);
      resolve(o);
    };
    const timer = setTimeout(() => {
      ws.terminate();
      done({ ok: false, error: "timeout" });
    }, 30_000);
    ws.on("unexpected-response", (_req, res) => {
      done({ ok: false, status: res.statusCode, retryAfter: res.headers["retry-after"] as string | undefined });
      res.resume();
    });
    ws.on("error", (err) => done({ ok: false, error: (err as NodeJS.ErrnoException).code ?? err.message }));
    ws.on("close", (code) => done({ ok: false, error: `closed ${code}` }));
    ws.on("message", (data) => {
      const m = JSON.parse(String(data));
      if (m.type === "challenge")
        ws.send(
          JSON.stringify({
            type: "register",
            user_id: user.npub,
            auth: makeAuthEvent({ secretKey: user.secretKey, challenge: m.challenge, relayUrl: relay.wsUrl }),
          }),
        );
      else if (m.type === "registered") done({ ok: true, ws });
    });
  });
}

function pong(ws: WebSocket): Promise<boolean> {
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), 10_000);
    ws.once("message", (d) => {
      clearTimeout(t);
      resolve(JSON.parse(String(d)).type === "pong");
    });
    ws.send('{"type":"ping"}');
  });
}

describe("out of resources", () => {
  it(`out of resources, refuse, never stop: under ${OPEN_FILES} open files, ${DEVICES} devices: the ones past the limit are refused 503 with Retry-After (no 500), the ones held keep working (the runtime, if it dies at accept(), started again and they register again), /healthz answers, and freed room is taken again`, async () => {
    expect(relay.output()).toMatch(new RegExp(`open files: ${OPEN_FILES}`));
    const held: WebSocket[] = [];
    const heldUsers: User[] = [];
    const refused: Outcome[] = [];
    for (let i = 0; i < DEVICES; i += BATCH) {
      const users = Array.from({ length: Math.min(BATCH, DEVICES - i) }, () => newUser());
      const outcomes = await Promise.all(users.map((u) => register(u)));
      for (const [j, o] of outcomes.entries())
        if (o.ok) {
          held.push(o.ws);
          heldUsers.push(users[j]!);
        } else refused.push(o);
    }
    const statuses = refused.map((o) => (o.ok ? "ok" : (o.status ?? o.error)));
    const tally: Record<string, number> = {};
    for (const k of statuses) tally[String(k)] = (tally[String(k)] ?? 0) + 1;
    console.log(`held ${held.length}, refused ${refused.length}:`, JSON.stringify(tally));
    expect(launcherExited).toBe(false); // the launcher never stopped
    expect(held.length).toBeGreaterThan(100);
    expect(refused.length).toBeGreaterThan(0);
    for (const o of refused) if (!o.ok && o.status !== undefined) expect([o.status, o.retryAfter !== undefined]).toEqual([503, true]);
    expect(relay.output()).not.toMatch(/SQLITE_CANTOPEN.*unhandled|"msg":"unhandled"/);
    // What it holds keeps working at once; and it answers /healthz again once the burst's objects
    // are evicted (10 s after their last event: their databases' descriptors go with them).
    // At the limit the runtime itself may reset a connection it had accepted, or die of an accept()
    // that failed (docs/operating.md, "Open files"), which the relay cannot see or prevent; the
    // launcher then starts it again at once, and the devices register again. Either way it serves.
    const dropped = held.filter((ws) => ws.readyState !== WebSocket.OPEN).length;
    const lost: User[] = [];
    if (dropped > held.length * 0.1) {
      await waitFor(() => /starting workerd again/.test(relay.output()), {
        what: "the launcher to start the runtime again",
        timeout: 30_000,
      });
      await waitFor(async () => (await fetch(`${relay.url}/healthz`).catch(() => null))?.status === 200, {
        what: "/healthz after the runtime was started again",
        timeout: 30_000,
      });
      // What the crash dropped is gone from `held`; those devices register again below.
      for (const [i, ws] of held.entries()) if (ws.readyState !== WebSocket.OPEN) lost.push(heldUsers[i]!);
      held.splice(0, held.length, ...held.filter((ws) => ws.readyState === WebSocket.OPEN));
    }
    const open = held.filter((ws) => ws.readyState === WebSocket.OPEN);
    expect(open.length).toBeGreaterThanOrEqual(Math.floor(held.length * 0.9));
    const answers = await Promise.all(open.slice(0, 20).map((ws) => pong(ws)));
    expect(answers.filter(Boolean).length).toBeGreaterThanOrEqual(Math.min(19, answers.length));
    await waitFor(async () => (await fetch(`${relay.url}/healthz`).catch(() => null))?.status === 200, {
      what: "/healthz answering",
      timeout: 30_000,
    });
    // Room freed is taken again: it never stopped accepting.
    expect(launcherExited).toBe(false);
    for (const ws of held.splice(0, 200)) ws.close();
    // New devices, or the ones a crash of the runtime dropped, registering again.
    const comers = lost.length > 0 ? lost.slice(0, 20) : Array.from({ length: 20 }, () => newUser());
    const again = await Promise.all(comers.map((u) => register(u)));
    expect(again.filter((o) => o.ok).length).toBeGreaterThan(0);
    for (const o of again) if (o.ok) o.ws.close();
    for (const ws of held) ws.terminate();
  }, 120_000);
});
