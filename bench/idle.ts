// How many idle devices one self-hosted machine holds: N registered Tally devices (one user each,
// so one object each on the relay) that stay connected and ping as the SDK does
// (CLIENT_LIMITS.ping_interval_ms, each device at its own phase), on a server started for the
// figure. For each N, in one growing crowd (1,000, then 4,000 more, ...):
//   - resident memory per device (the server's whole process tree, less what it held with no
//     device), read once the objects have had time to hibernate (workerd evicts an object 10 s
//     after its last event) and again after the CPU samples (a whole idle-alarm period later);
//   - CPU per idle device per minute: the server's CPU over a few sample windows while the devices
//     only ping, less what the server spends with no device at all (one window before the first
//     device), each window's figure on its own, the median reported (other work on a shared
//     machine moves CPU figures; memory hardly).
import WebSocket from "ws";
import { CLIENT_LIMITS } from "../clients/tally/limits";
import { newUser } from "../test/helpers/tally";
import type { Server } from "./baselines/start";
import { treeCpuMs, treeRssKb } from "./cpu";
import { connect, type Conn } from "./tally";

export interface IdleStep {
  /** Devices connected, registered and pinging. */
  devices: number;
  /** Server tree RSS with no device, kB. */
  baseKb: number;
  /** kB per device once the objects had time to hibernate (settleMs after the last register). */
  settledKbPerDevice: number;
  /** kB per device after the CPU samples (a whole idle period later). */
  kbPerDevice: number;
  /** ms of server CPU per idle device per minute, one figure per sample window (less the no-device rate). */
  cpuSamples: number[];
  /** ms of server CPU per minute with no device connected (subtracted from cpuSamples). */
  baseCpuPerMinute: number;
  /** Seconds the step's connects and registers took (with `concurrency` in flight). */
  connectSeconds: number;
  /** Pings sent during the step's samples, and how many of them were answered (within PONG_GRACE_MS after). */
  pings: number;
  pongs: number;
  /** Object wakes per idle device per hour over the samples (the server's own count; null when it keeps none). */
  wakesPerDeviceHour: number | null;
}

export interface IdleOptions {
  /** Crowd sizes, ascending: each step adds devices to reach the next. */
  counts: number[];
  /** Registers in flight while the crowd grows. */
  concurrency: number;
  /** Wait after the last register before memory is read, ms. */
  settleMs: number;
  /** CPU sample windows per step, and each one's length, ms. */
  samples: number;
  sampleMs: number;
  pingIntervalMs?: number;
  log?: (line: string) => void;
  /** The server's count of object wakes so far (the relay's /metrics), if it keeps one. */
  wakes?: () => Promise<number>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How long pongs still on their way after the CPU samples are waited for. */
const PONG_GRACE_MS = 15_000;

/** Tries per device, and the longest wait between two (doubling from 1 s, with jitter). */
const REGISTER_TRIES = 10;
const MAX_RETRY_WAIT_MS = 30_000;

/**
 * A new user's device, registered. On a loaded machine a register can miss the relay's auth
 * timeout (the challenge answered too late, while thousands of idle checks fire at once); such a
 * device waits and tries again as a new one, backing off as the SDK does when it reconnects, up to
 * REGISTER_TRIES times: a burst passes, and only a server that stays saturated ends the crowd.
 */
async function connectRetrying(url: string, retried: () => void): Promise<Conn> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await connect(url, newUser());
    } catch (err) {
      if (attempt >= REGISTER_TRIES) throw err;
      retried();
      await sleep(Math.min(MAX_RETRY_WAIT_MS, 1000 * 2 ** (attempt - 1)) * (0.5 + Math.random()));
    }
  }
}

/** The server's CPU (whole process tree) over a window of `ms`, in ms per minute. */
async function cpuPerMinute(s: Server, ms: number): Promise<number> {
  const c0 = treeCpuMs(s.pid);
  const w0 = performance.now();
  await sleep(ms);
  return (treeCpuMs(s.pid) - c0) / ((performance.now() - w0) / 60_000);
}

export interface IdleResult {
  steps: IdleStep[];
  /** Why the crowd stopped growing before the last count (registers failing: the server is saturated), if it did. */
  stopped?: string;
}

/**
 * A crowd of idle devices on `s`, grown step by step; the server's memory and CPU at each step. A
 * step whose registers keep failing ends the crowd there ("as far as the machine goes"): the steps
 * before it are returned, with the reason.
 */
export async function idleDevices(s: Server, o: IdleOptions): Promise<IdleResult> {
  const every = o.pingIntervalMs ?? CLIENT_LIMITS.ping_interval_ms;
  const log = o.log ?? (() => {});
  // One device first and gone again, so code is loaded and compiled before the base is read.
  await (await connect(s.url, newUser())).close();
  await sleep(1000);
  const baseKb = treeRssKb(s.pid);
  const baseCpuPerMinute = await cpuPerMinute(s, o.sampleMs);
  const conns: Conn[] = [];
  const timers: Array<ReturnType<typeof setTimeout>> = [];
  let pings = 0;
  let pongs = 0;
  let lost = 0;
  let retries = 0;
  const steps: IdleStep[] = [];
  let stopped: string | undefined;
  try {
    for (const target of o.counts) {
      const t0 = performance.now();
      let next = conns.length;
      const grown = await Promise.all(
        Array.from({ length: o.concurrency }, async () => {
          while (next < target && stopped === undefined) {
            next++;
            const c = await connectRetrying(s.url, () => void retries++);
            conns.push(c);
            c.on("pong", () => void pongs++);
            c.ws.on("close", () => void lost++);
            // Pings as the SDK sends them, each device at its own phase.
            const ping = () => {
              if (c.ws.readyState !== WebSocket.OPEN) return;
              pings++;
              c.ws.send('{"type":"ping"}');
            };
            timers.push(
              setTimeout(() => {
                ping();
                timers.push(setInterval(ping, every));
              }, Math.random() * every),
            );
          }
        }),
      ).then(
        () => true,
        (err: Error) => {
          stopped = `registers failed on the way to ${target} devices (${conns.length} registered): ${err.message}`;
          return false;
        },
      );
      // A crowd stopped short (the server refuses: its open-file limit, say) is measured as far as
      // it went, if it went past the last step: that is how many this machine holds.
      const devices = grown ? target : conns.length;
      if (!grown && devices <= (steps.at(-1)?.devices ?? 0)) break;
      const connectSeconds = (performance.now() - t0) / 1000;
      log(
        `${devices} devices registered in ${connectSeconds.toFixed(1)} s (${retries} registers tried again); idle ${o.settleMs / 1000} s`,
      );
      await sleep(o.settleMs);
      const settledKb = treeRssKb(s.pid);
      const [p0, q0] = [pings, pongs];
      const w0 = o.wakes ? await o.wakes() : null;
      const sampled = performance.now();
      const cpuSamples: number[] = [];
      for (let k = 0; k < o.samples; k++) cpuSamples.push(((await cpuPerMinute(s, o.sampleMs)) - baseCpuPerMinute) / devices);
      const hours = (performance.now() - sampled) / 3_600_000;
      const wakesPerDeviceHour = o.wakes && w0 !== null ? ((await o.wakes()) - w0) / devices / hours : null;
      const kb = treeRssKb(s.pid);
      // The pings sent in the windows, and their pongs: on a saturated machine the last ones are
      // still on their way, so wait for them a little (the devices keep pinging meanwhile).
      const sent = pings - p0;
      for (let waited = 0; pongs - q0 < sent && waited < PONG_GRACE_MS; waited += 500) await sleep(500);
      if (lost) throw new Error(`${lost} idle devices lost their socket`);
      steps.push({
        devices,
        baseKb,
        settledKbPerDevice: (settledKb - baseKb) / devices,
        kbPerDevice: (kb - baseKb) / devices,
        cpuSamples,
        baseCpuPerMinute,
        connectSeconds,
        pings: sent,
        pongs: Math.min(sent, pongs - q0),
        wakesPerDeviceHour,
      });
      log(
        `${devices} devices: ${((kb - baseKb) / devices).toFixed(1)} kB each, CPU ${cpuSamples.map((x) => x.toFixed(3)).join(" / ")} ms per device per minute (no-device rate ${baseCpuPerMinute.toFixed(0)} ms per minute)${wakesPerDeviceHour === null ? "" : `, ${wakesPerDeviceHour.toFixed(3)} wakes per device per hour`}`,
      );
      if (!grown) break;
    }
  } finally {
    for (const t of timers) clearTimeout(t);
    for (let i = 0; i < conns.length; i += 500) await Promise.all(conns.slice(i, i + 500).map((c) => c.close()));
  }
  return { steps, stopped };
}
