// Nothing lost in ordinary trouble, through two real relay processes (the Tally protocol sections 6.5, 7,
// 8.2, 13): three users with two devices each, all on both relays; messages between random
// users from random devices, app handlers that fail at random, one relay restarted and the other
// stopped for a while mid-run. Every message is handled exactly once on every device of its
// recipient, and none is lost. TALLY_CHAOS_MESSAGES sets the number (default 60, to keep the
// suite fast; TALLY_CHAOS_MESSAGES=2000 runs the full figure, for minutes).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { TallyClient, memoryStore } from "../../clients/tally/index";
import { freePort, startRelay, type RelayProcess } from "../helpers/relay-process";
import { newUser } from "../helpers/tally";
import { sleep, waitFor } from "../helpers/wait";

const N = Number(process.env.TALLY_CHAOS_MESSAGES ?? 60);
/** How long every message may take to reach every device after the last send (the machine's pace: about 10 messages a second under load). */
const SETTLE_MS = Math.max(120_000, N * 600);
const FAIL_RATE = 0.1;
const relays: RelayProcess[] = [];
const clients: TallyClient[] = [];
afterAll(async () => {
  for (const c of clients) c.close();
  for (const r of relays) await r.stop({ kill: true });
});

async function relayAt(port: number, dataDir: string): Promise<RelayProcess> {
  const r = await startRelay({ port, dataDir });
  relays.push(r);
  return r;
}

describe("chaos through two relays", () => {
  it(
    `6.5, 7, 8.2: ${N} messages among 3 users on 6 devices, random handler failures, one relay restarted and one stopped: each handled exactly once on every recipient device, 0 lost`,
    async () => {
      const ports = [await freePort(), await freePort()];
      const dirs = [mkdtempSync(join(tmpdir(), "chaos-a-")), mkdtempSync(join(tmpdir(), "chaos-b-"))];
      let [r1, r2] = await Promise.all([relayAt(ports[0], dirs[0]), relayAt(ports[1], dirs[1])]);
      const urls = [r1.wsUrl, r2.wsUrl];
      const users = [newUser(), newUser(), newUser()];
      let failures = 0;
      const handled = new Map<TallyClient, Map<string, number>>();
      /** Relay closes by code and relay errors by code, every device together (TALLY_CHAOS_DEBUG). */
      const closes = new Map<string | number, number>();
      const devicesOf = users.map((u) =>
        [0, 1].map(() => {
          const c = new TallyClient({
            relayUrls: urls,
            secretKey: u.secretKey,
            store: memoryStore(),
            retryMs: 500,
            maxRetryMs: 2_000,
            sync: { retryFailedMs: 300, presenceIntervalMs: 1_000, answerTimeoutMs: 2_000 },
          });
          const counts = new Map<string, number>();
          handled.set(c, counts);
          c.on("message", (m) => {
            if (Math.random() < FAIL_RATE) {
              failures++;
              throw new Error("chaos: the app failed");
            }
            counts.set(m.id, (counts.get(m.id) ?? 0) + 1);
          });
          c.on("handler_failed", () => {}); // expected here
          c.on("close", (code) => void closes.set(code, (closes.get(code) ?? 0) + 1));
          c.on("relay_error", (code) => void closes.set(code, (closes.get(code) ?? 0) + 1));
          clients.push(c);
          return c;
        }),
      );
      const quiet = console.error;
      console.error = (...a: unknown[]) => void (String(a[0]).includes("listener failed") || quiet(...a));
      try {
        await Promise.all(devicesOf.flat().map((c) => c.connect()));
        const sent: Array<{ id: string; to: number; from: string; dev: TallyClient }> = [];
        const t0 = Date.now();
        const trouble: Array<Promise<unknown>> = [];
        for (let i = 0; i < N; i++) {
          const from = Math.floor(Math.random() * 3);
          const to = (from + 1 + Math.floor(Math.random() * 2)) % 3;
          const dev = devicesOf[from][Math.floor(Math.random() * 2)];
          sent.push({ id: await dev.send(users[to].npub, "note", { i }), to, from: users[from].npub, dev });
          if (i === Math.floor(N / 4)) {
            // Relay 1 restarts (a crash, then back on its port and data).
            trouble.push(
              (async () => {
                await r1.stop({ kill: true });
                r1 = await relayAt(ports[0], dirs[0]);
              })(),
            );
          }
          if (i === Math.floor(N / 2)) trouble.push(r2.stop({ kill: true }));
          if (i === Math.floor((3 * N) / 4)) {
            await Promise.all(trouble);
            r2 = await relayAt(ports[1], dirs[1]);
          }
          if (i % 10 === 9) await sleep(25); // an app's pace, so the trouble lands mid-run
        }
        await Promise.all(trouble);
        const missing = () => sent.reduce((n, m) => n + devicesOf[m.to].filter((d) => !handled.get(d)!.has(m.id)).length, 0);
        const sentAt = Date.now();
        const progress = setInterval(() => {
          console.log(`chaos: ${((Date.now() - sentAt) / 1000).toFixed(0)} s after the last send, missing ${missing()}`);
          if (process.env.TALLY_CHAOS_DEBUG) {
            console.log(`  closes and relay errors: ${JSON.stringify([...closes])}`);
            for (const m of sent) {
              const ds = devicesOf[m.to];
              const miss = ds.filter((d) => !handled.get(d)!.has(m.id));
              if (miss.length === 0) continue;
              void Promise.all(
                ds.map(async (d) => [
                  handled.get(d)!.has(m.id),
                  await d.store.hasLedger(m.from, m.id),
                  (await d.store.getProcessed(m.from, m.id))?.result,
                  d.connected,
                  d.ownDevices.size,
                ]),
              ).then(async (st) => {
                const o = await m.dev.store.getOutbox(m.id);
                const sender = o
                  ? `outbox attempts ${o.attempts}, last ${((Date.now() - o.last_attempt_at) / 1000).toFixed(0)} s ago`
                  : "not in the outbox";
                console.log(`  ${m.id.slice(0, 6)} to ${m.to}: ${JSON.stringify(st)}; sender ${sender}, connected ${m.dev.connected}`);
              });
            }
          }
        }, 5_000);
        await waitFor(() => missing() === 0, {
          what: "every message on every recipient device",
          timeout: SETTLE_MS,
          interval: 200,
        }).finally(() => clearInterval(progress));
        const twice = sent.reduce((n, m) => n + devicesOf[m.to].filter((d) => handled.get(d)!.get(m.id)! > 1).length, 0);
        console.log(
          `chaos: ${N} messages, 3 users, 6 devices, 2 relays (one restarted, one stopped and started): ` +
            `${failures} handler failures; handled on every recipient device: ${sent.length * 2 - missing()} of ${sent.length * 2}; ` +
            `twice: ${twice}; lost: ${missing()}; ${((Date.now() - t0) / 1000).toFixed(1)} s`,
        );
        expect(twice).toBe(0);
        expect(missing()).toBe(0);
      } finally {
        console.error = quiet;
      }
    },
    SETTLE_MS + 120_000 + N * 100,
  );
});
