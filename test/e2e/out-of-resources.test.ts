// Out of resources, refuse; never stop (docs/operating.md, "Open files"): a relay started under a
// low open-file limit, asked by a crowd for more devices than it allows, refuses the ones it cannot
// take with 503 unavailable and Retry-After before the runtime reaches the limit (the launcher
// counts the runtime's descriptors and tells the Worker: scripts/open-files.ts), so the runtime
// neither resets connections nor dies; it keeps the devices it holds (they still ping), answers
// /healthz, and takes new devices again once room is freed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { makeAuthEvent } from "../../shared/tally/auth";
import { newUser, type User } from "../helpers/tally";
import { startRelay, type RelayProcess } from "../helpers/relay-process";
import { waitFor } from "../helpers/wait";

const OPEN_FILES = 1024;
const DEVICES = 600;
/** Registers in flight at once: a crowd arriving, as devices do after a network comes back. */
const IN_FLIGHT = 10;

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
    ws.on("unexpected-response", (req, res) => {
      done({ ok: false, status: res.statusCode, retryAfter: res.headers["retry-after"] as string | undefined });
      // As a browser does with a refused upgrade (and `ws` without this listener): the connection goes.
      req.destroy();
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
  it(`near the open-file limit, refuse; never reach it: under ${OPEN_FILES} open files, a crowd of ${DEVICES} devices: the ones past the limit are refused 503 with Retry-After (no 500, no connection reset by the runtime, the runtime never dies), the ones held keep working, /healthz answers, and freed room is taken again`, async () => {
    expect(relay.output()).toMatch(new RegExp(`open files: ${OPEN_FILES}`));
    const held: WebSocket[] = [];
    const refused: Outcome[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next++ < DEVICES) {
          const o = await register(newUser());
          if (o.ok) held.push(o.ws);
          else refused.push(o);
        }
      }),
    );
    const tally: Record<string, number> = {};
    for (const o of refused) if (!o.ok) tally[String(o.status ?? o.error)] = (tally[String(o.status ?? o.error)] ?? 0) + 1;
    console.log(`held ${held.length}, refused ${refused.length}:`, JSON.stringify(tally));
    expect(launcherExited).toBe(false); // the launcher never stopped
    expect(relay.output()).not.toMatch(/starting workerd again/); // nor the runtime
    expect(relay.output()).toMatch(/near the open-file limit: new connections are refused/);
    expect(held.length).toBeGreaterThan(100);
    expect(refused.length).toBeGreaterThan(0);
    for (const o of refused) expect(o.ok ? "ok" : [o.status, o.retryAfter !== undefined]).toEqual([503, true]);
    expect(relay.output()).not.toMatch(/SQLITE_CANTOPEN.*unhandled|"msg":"unhandled"/);
    // What it holds keeps working.
    expect(held.filter((ws) => ws.readyState === WebSocket.OPEN)).toHaveLength(held.length);
    const answers = await Promise.all(held.slice(0, 20).map((ws) => pong(ws)));
    expect(answers.every(Boolean)).toBe(true);
    expect((await fetch(`${relay.url}/healthz`)).status).toBe(200);
    // Room freed is taken again. The launcher counts the runtime's descriptors once a second while
    // new connections are refused, and the freed devices' objects let go of their databases 10 s
    // after their last event: a device refused meanwhile comes back, as the SDKs do after Retry-After.
    for (const ws of held.splice(0, 100)) ws.close();
    const comers = Array.from({ length: 10 }, () => newUser());
    let taken = 0;
    await waitFor(
      async () => {
        const again = await Promise.all(comers.map((u) => register(u)));
        for (const o of again) if (o.ok) o.ws.close();
        taken += again.filter((o) => o.ok).length;
        return taken > 0;
      },
      { what: "a device taken again once room was freed", timeout: 40_000, interval: 2_000 },
    );
    expect(relay.output()).toMatch(/clear of the open-file limit again/);
    expect(launcherExited).toBe(false);
    for (const ws of held) ws.terminate();
  }, 120_000);
});
