// `npm run bench:profile`: a CPU profile of the relay's isolate under `workerd serve` while it
// carries Tally online delivery (or, with --store, offline store then flush; with --flush, only
// the flush of 1,000 stored envelopes; with --register,
// connect and register of new users (with --returning as well, of the same users again, whose
// objects exist); with --mailbox, mailbox POSTs (one topic, then 100 fresh topics); with --passnote, room traffic; with --hosting, Minca
// hosting appends of 100 versions per POST). workerd runs with its
// inspector on a loopback port (through a wrapper given to scripts/serve.ts as --workerd); the V8
// sampling profiler is driven over the inspector protocol. Prints the functions with the most
// self time and writes the whole profile to dist/relay.cpuprofile (open it in Chrome
// DevTools or speedscope). With --bare the same load runs against baseline (a), the bare Durable
// Object (bench/baselines/bare-do.ts), profiled the same way, into dist/bare.cpuprofile: the two
// profiles side by side show what the relay does that the platform's least does not.
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import WebSocket from "ws";
import { buildWorker } from "../scripts/build";
import { freePort, startRelay } from "../test/helpers/relay-process";
import { startBareDo, workerdBinary } from "./baselines/start";
import { roomTraffic } from "./passnote";
import { newUser } from "../test/helpers/tally";
import { BENCH_CLIENT_HEADER, hostingAppends, hostingSetup, mailboxPosts } from "./minca";
import { flushTo, onlineDelivery, registers, storeFor, storeThenFlush } from "./tally";

const { values } = parseArgs({
  options: {
    passnote: { type: "boolean" },
    store: { type: "boolean" },
    flush: { type: "boolean" },
    register: { type: "boolean" },
    returning: { type: "boolean" },
    mailbox: { type: "boolean" },
    hosting: { type: "boolean" },
    bare: { type: "boolean" },
    top: { type: "string" },
  },
});
const ROOT = new URL("../", import.meta.url).pathname;

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

async function inspector(port: number): Promise<(method: string, params?: object) => Promise<unknown>> {
  let targets: Array<{ webSocketDebuggerUrl: string }> = [];
  for (let i = 0; i < 50 && targets.length === 0; i++) {
    try {
      targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  if (!targets.length) throw new Error("no inspector target");
  const ws = new WebSocket(targets[0].webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  let next = 1;
  const pending = new Map<number, (r: unknown) => void>();
  ws.on("message", (d) => {
    const m = JSON.parse(String(d));
    if (m.id && pending.has(m.id)) pending.get(m.id)!(m.result);
  });
  return (method, params = {}) =>
    new Promise((resolve) => {
      const id = next++;
      pending.set(id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
}

async function main() {
  buildWorker(undefined, { readable: true }); // the source's function names in the profile
  const dir = mkdtempSync(join(tmpdir(), "bench-profile-"));
  const port = await freePort();
  const real = workerdBinary();
  const wrapper = join(dir, "workerd");
  writeFileSync(wrapper, `#!/bin/sh\nexec ${JSON.stringify(real)} "$@" --inspector-addr=127.0.0.1:${port}\n`);
  chmodSync(wrapper, 0o755);
  const relay = values.bare
    ? await startBareDo({ workerd: wrapper })
    : await startRelay({ target: "workerd", env: { WORKERD: wrapper, TRUSTED_PROXY_HEADER: BENCH_CLIENT_HEADER } });
  try {
    // --flush: only the flush of 1,000 stored envelopes is profiled (their storing is not).
    const flushLoad = { senders: 10, perSender: 100, inFlight: 8 };
    const stored = values.flush ? await storeFor(relay.url, flushLoad) : undefined;
    // --hosting: each run appends to a space of its own (signed before the profile starts).
    const hosting = async () => hostingSetup(relay.url, { batches: 5, host: !values.bare });
    const spaces = values.hosting ? [await hosting(), await hosting()] : [];
    // --register --returning: the warm-up registers these users; the profile, the same ones again.
    const returning = Array.from({ length: 100 }, newUser);
    const load = () =>
      values.mailbox
        ? mailboxPosts(relay.url, { topics: 1, perTopic: 50, inFlight: 8 }).then(() =>
            mailboxPosts(relay.url, { topics: 100, perTopic: 5, inFlight: 8 }),
          )
        : values.hosting
          ? hostingAppends(relay.url, spaces.shift()!)
          : values.passnote
            ? roomTraffic(relay.url, { peers: 16, perSender: 100, inFlight: 2, bytes: 200 })
            : values.register
              ? registers(relay.url, { users: values.returning ? returning : Array.from({ length: 100 }, newUser), concurrency: 8 })
              : values.store
                ? storeThenFlush(relay.url, flushLoad)
                : onlineDelivery(relay.url, { pairs: 20, inFlight: 8, perSender: 150 });
    if (!values.flush)
      await load(); // warm-up
    else await storeThenFlush(relay.url, flushLoad); // warm-up
    const send = await inspector(port);
    await send("Profiler.enable");
    await send("Profiler.setSamplingInterval", { interval: 200 });
    await send("Profiler.start");
    const result = stored ? { flushMs: await flushTo(relay.url, stored.to, stored.stored) } : await load();
    const { profile } = (await send("Profiler.stop")) as { profile: Profile };
    console.log(JSON.stringify(result));
    mkdirSync(join(ROOT, "dist"), { recursive: true });
    writeFileSync(join(ROOT, values.bare ? "dist/bare.cpuprofile" : "dist/relay.cpuprofile"), JSON.stringify(profile));
    // Self time per function.
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const self = new Map<string, number>();
    let total = 0;
    profile.samples.forEach((id, i) => {
      const n = byId.get(id)!;
      const dt = profile.timeDeltas[i] ?? 0;
      const key = `${n.callFrame.functionName || "(anonymous)"} ${n.callFrame.url.split("/").pop()}:${n.callFrame.lineNumber + 1}`;
      self.set(key, (self.get(key) ?? 0) + dt);
      total += dt;
    });
    const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top ?? 40));
    for (const [k, us] of top)
      console.log(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(1).padStart(8)} ms  ${k}`);
    // Total time (self and callees) per function, each counted once per sample however deep it recurs.
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const inclusive = new Map<string, number>();
    profile.samples.forEach((id, i) => {
      const seen = new Set<string>();
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const n = byId.get(at)!;
        const key = `${n.callFrame.functionName || "(anonymous)"} ${n.callFrame.url.split("/").pop()}:${n.callFrame.lineNumber + 1}`;
        if (seen.has(key)) continue;
        seen.add(key);
        inclusive.set(key, (inclusive.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0));
      }
    });
    console.log("\ntotal time (self and callees):");
    for (const [k, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top ?? 40)))
      console.log(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(1).padStart(8)} ms  ${k}`);
  } finally {
    await relay.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
