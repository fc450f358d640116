// Figures that need servers of their own, started for the measurement: memory per idle
// connection on a freshly started server (nothing else has run there, so no memory freed by
// earlier load is reused), and the cold start of an evicted object (the server restarted on the
// same storage, so every object is out of memory and is started by the message that reaches it).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startRelay } from "../test/helpers/relay-process";
import { newUser } from "../test/helpers/tally";
import { startBareDo, type Server } from "./baselines/start";
import { treeRssKb } from "./cpu";
import { connect, idleMemory, percentile, storedTo } from "./tally";

export type FreshTarget = "relay" | "bare";

function start(t: FreshTarget, dir: string): Promise<Server> {
  return t === "relay" ? startRelay({ target: "workerd", dataDir: dir }) : startBareDo({ dir });
}

/** kB of resident memory per idle registered connection, on a server started for it. */
export async function freshIdleMemory(t: FreshTarget, o: { count: number; idleMs: number }): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), `bench-fresh-${t}-`));
  const s = await start(t, dir);
  try {
    // One connection first, so the isolate's code is loaded and compiled before "before" is read.
    const c = await connect(s.url, newUser());
    await c.close();
    return (await idleMemory(s.url, () => treeRssKb(s.pid), o)).kbPerConnection;
  } finally {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Cold start: `count` recipients register once (their objects are made, and keep their user), half
 * of them (every other one) are sent one envelope then (stored: the queue's schema, the lease of
 * the relay-wide total), the server restarts on the same storage, a sender connects, and sends one
 * envelope to each recipient in turn (offline: stored), each reaching an object that is not in
 * memory. ms from sending to the relay's `queued` answer: `first` for the recipients that had
 * nothing stored (this envelope is also their first store), `stored` for the others.
 */
export async function coldStart(
  t: FreshTarget | ((dir: string) => Promise<Server>),
  o: { count: number },
): Promise<{ first: { p50: number; p99: number }; stored: { p50: number; p99: number } }> {
  const dir = mkdtempSync(join(tmpdir(), "bench-cold-"));
  const recipients = Array.from({ length: o.count * 2 }, newUser);
  const restart = typeof t === "function" ? t : (d: string) => start(t, d);
  let s = await restart(dir);
  try {
    for (const r of recipients) await (await connect(s.url, r)).close();
    const before = await connect(s.url, newUser());
    for (const [k, r] of recipients.entries()) if (k % 2 === 1) await storedTo(before, r, `b${k}`);
    await before.close();
    await s.stop();
    s = await restart(dir);
    const sender = await connect(s.url, newUser());
    const ms: number[][] = [[], []];
    for (const [k, r] of recipients.entries()) {
      const t0 = performance.now();
      await storedTo(sender, r, `c${k}`);
      ms[k % 2].push(performance.now() - t0);
    }
    await sender.close();
    const pcts = (xs: number[]) => {
      xs.sort((x, y) => x - y);
      return { p50: percentile(xs, 50), p99: percentile(xs, 99) };
    };
    return { first: pcts(ms[0]), stored: pcts(ms[1]) };
  } finally {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
