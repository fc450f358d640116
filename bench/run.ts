// `npm run bench`: the relay against its limit and against what users would pick instead, side by
// side, in one run. Up at once on loopback:
//   relay    the relay under `workerd serve`, as `npm start` runs it (self-hosting);
//   (a)      bench/baselines/bare-do.ts: bare Durable Objects on the same workerd, the platform's limit;
//   (b)      bench/baselines/node-ws-relay.ts: a Node relay on `ws`, what a user might run instead;
//   wrangler the relay under `wrangler dev` (only with --wrangler: one more column).
// Each figure is measured on one, then the next, round after round (the order turning each round),
// and the median of each is shown, so load that comes and goes on a shared machine falls on all
// alike; ratios of two columns are the result, never the absolute numbers. CPU per operation
// counts each server's whole process tree. Reconciliation is pure and runs in this process.
//
//   npm run bench                  full run; writes bench/results/baselines.md, baselines.svg, reconcile.md
//   npm run bench -- --big         also reconciliation of 10^6 records with 1 and 100 differences (minutes, 1.6 GB more)
//   npm run bench -- --wrangler    also the relay under wrangler dev, as a column of its own
//   npm run bench -- --only tally  only the figures whose name contains "tally" (quick profiling;
//                                  "mailbox" or "hosting" for one half of the Minca figures)
//   npm run bench -- --only reconcil  only reconciliation (no servers started); still writes reconcile.md
//   npm run bench -- --smoke       a few seconds, one round, nothing written (part of npm test)
//   npm run bench -- --no-build    on the Worker bundle already in dist/worker/ (npm test: its end-to-end
//                                  run built it from the same tree minutes before)
//   (the full run also reopens a Passnote SQLite database of 100,000 records: bench/passnote-store.ts)
//   npm run bench -- --only idle   only the idle-devices figure (bench/idle.ts: fresh relay and (b),
//                                  10,000 devices each, about 15 minutes); --idle-counts 1000,5000 to
//                                  choose the crowd sizes. Left out of --smoke.
import { parseArgs } from "node:util";
import { buildWorker } from "../scripts/build";
import { startRelay } from "../test/helpers/relay-process";
import { startBareDo, startNodeRelay, type Server } from "./baselines/start";
import { median, reconcileTable, record, table, type Target, writeBaselines, writeReconcile } from "./figures";
import { withCpu } from "./cpu";
import { roomTraffic } from "./passnote";
import { reconcileRun, type ReconcileResult } from "./reconcile";
import { storeReopen, storeReopenTable } from "./passnote-store";
import { onlineDelivery, registers, storeThenFlush } from "./tally";
import { BENCH_CLIENT_HEADER, hostingAppends, hostingPages, hostingSetup, mailboxPosts, mailboxWake } from "./minca";
import { coldStart, freshIdleMemory, type FreshTarget } from "./fresh";
import { bundleSizes } from "./bundles";
import { idleDevices } from "./idle";
import { idleMonthlyCostPer1000 } from "./cloudflare-cost";
import { costed } from "./cost-measure";
import { newUser } from "../test/helpers/tally";

const { values } = parseArgs({
  options: {
    smoke: { type: "boolean" },
    rounds: { type: "string" },
    big: { type: "boolean" },
    wrangler: { type: "boolean" },
    only: { type: "string" },
    "idle-counts": { type: "string" },
    "no-build": { type: "boolean" },
  },
});
const smoke = values.smoke === true;
const rounds = Number(values.rounds ?? (smoke ? 1 : 3));

const SIZES = smoke
  ? {
      pairs: 4,
      inFlight: 4,
      perSender: 20,
      fanPairs: 2,
      fanPer: 10,
      senders: 2,
      storePer: 20,
      registers: 6,
      concurrency: 2,
      idle: 8,
      room2: 20,
      room16: 4,
      roomPeers: 4,
      wakes: 3,
      topicPosts: 10,
      topics: 4,
      perTopic: 3,
      batches: 1,
      perBatch: 10,
      reads: 1,
      cold: 3,
    }
  : {
      pairs: 20,
      inFlight: 8,
      perSender: 150,
      fanPairs: 10,
      fanPer: 100,
      senders: 10,
      storePer: 100,
      registers: 100,
      concurrency: 8,
      idle: 200,
      room2: 300,
      room16: 60,
      roomPeers: 16,
      wakes: 30,
      topicPosts: 90,
      topics: 100,
      perTopic: 5,
      batches: 5,
      perBatch: 100,
      reads: 5,
      cold: 30,
    };

const targets: Target[] = ["relay", "bare", "node", ...(values.wrangler ? (["wrangler"] as Target[]) : [])];

const wanted = (name: string) => !values.only || name.includes(values.only);
/** `--only reconcil` (any start of "reconciliation"): no server figure is wanted, none is started. */
const onlyReconcile = !!values.only && values.only.length >= 5 && "reconciliation".startsWith(values.only);
/** `--only idle`: the idle-devices figure alone, on servers of its own; the shared servers are not started. */
const onlyIdle = !!values.only && values.only.length >= 3 && "idle devices".startsWith(values.only);
const IDLE_COUNTS = (values["idle-counts"] ?? "1000,5000,10000").split(",").map(Number);

async function measure(t: Target, s: Server): Promise<void> {
  if (wanted("tally online")) {
    const on = await withCpu(s, () =>
      costed(
        t,
        s,
        "envelopes delivered online",
        () => onlineDelivery(s.url, { pairs: SIZES.pairs, inFlight: SIZES.inFlight, perSender: SIZES.perSender }),
        (r) => r.messages,
        2 * SIZES.pairs,
      ),
    );
    const o = on.result;
    record(`tally online delivery, ${SIZES.pairs} pairs, ${SIZES.inFlight} in flight each`, "envelopes/s", true, t, o.perSecond);
    record("tally online delivery latency p50", "ms", false, t, o.p50);
    record("tally online delivery latency p99", "ms", false, t, o.p99);
    record("tally CPU per envelope delivered online (incl. connecting)", "ms", false, t, on.cpuMs / o.messages);
  }
  if (wanted("tally fan-out")) {
    const fan = await onlineDelivery(s.url, { pairs: SIZES.fanPairs, inFlight: SIZES.inFlight, perSender: SIZES.fanPer, devices: 4 });
    record(`tally fan-out to 4 devices, ${SIZES.fanPairs} pairs`, "envelopes/s", true, t, fan.perSecond);
    record("tally fan-out latency p99", "ms", false, t, fan.p99);
  }
  if (wanted("tally store")) {
    const st = await withCpu(s, () =>
      costed(
        t,
        s,
        "envelopes stored and flushed",
        () => storeThenFlush(s.url, { senders: SIZES.senders, perSender: SIZES.storePer, inFlight: SIZES.inFlight }),
        (r) => r.stored,
        SIZES.senders + 1,
      ),
    );
    const sf = st.result;
    record(`tally offline store, ${sf.stored} envelopes from ${SIZES.senders} senders`, "envelopes/s", true, t, sf.storePerSecond);
    record(`tally store: flush of ${sf.stored} stored envelopes on register`, "ms", false, t, sf.flushMs);
    record("tally store: CPU per envelope stored and flushed", "ms", false, t, st.cpuMs / sf.stored);
  }
  if (wanted("passnote")) {
    const two = await withCpu(s, () => roomTraffic(s.url, { peers: 2, perSender: SIZES.room2, inFlight: SIZES.inFlight, bytes: 200 }));
    record("passnote room of 2, 200-byte frames", "frames/s", true, t, two.result.deliveriesPerSecond);
    record("passnote room of 2, latency p99", "ms", false, t, two.result.p99);
    record("passnote room of 2, CPU per frame delivered (incl. joining)", "ms", false, t, two.cpuMs / two.result.deliveries);
    const many = await withCpu(s, () => roomTraffic(s.url, { peers: SIZES.roomPeers, perSender: SIZES.room16, inFlight: 2, bytes: 200 }));
    record(`passnote room of ${SIZES.roomPeers}, each broadcasting`, "frames delivered/s", true, t, many.result.deliveriesPerSecond);
    record(`passnote room of ${SIZES.roomPeers}, latency p99`, "ms", false, t, many.result.p99);
    record(
      `passnote room of ${SIZES.roomPeers}, CPU per frame delivered (incl. joining)`,
      "ms",
      false,
      t,
      many.cpuMs / many.result.deliveries,
    );
  }
  // (b) has no mailbox or hosting routes: these compare the relay with (a) only.
  if (t !== "node" && wanted("minca mailbox")) {
    const wake = await mailboxWake(s.url, { rounds: SIZES.wakes, topic: "fresh" });
    record("minca mailbox: POST to long-poll answer, p50", "ms", false, t, wake.p50);
    record("minca mailbox: POST to long-poll answer, p99", "ms", false, t, wake.p99);
    const inUse = await mailboxWake(s.url, { rounds: SIZES.wakes, topic: "in use" });
    record("minca mailbox: POST to long-poll answer on a topic in use, p50", "ms", false, t, inUse.p50);
    record("minca mailbox: POST to long-poll answer on a topic in use, p99", "ms", false, t, inUse.p99);
    const one = await withCpu(s, () => mailboxPosts(s.url, { topics: 1, perTopic: SIZES.topicPosts, inFlight: SIZES.inFlight }));
    record(`minca mailbox: POSTs on one topic, ${SIZES.inFlight} in flight`, "POSTs/s", true, t, one.result.perSecond);
    const many = await withCpu(s, () =>
      costed(
        t,
        s,
        "mailbox POSTs",
        () => mailboxPosts(s.url, { topics: SIZES.topics, perTopic: SIZES.perTopic, inFlight: SIZES.inFlight }),
        (r) => r.posts,
        SIZES.topics,
      ),
    );
    record(`minca mailbox: POSTs across ${SIZES.topics} topics, ${SIZES.inFlight} in flight`, "POSTs/s", true, t, many.result.perSecond);
    record("minca mailbox: CPU per POST (both)", "ms", false, t, (one.cpuMs + many.cpuMs) / (one.result.posts + many.result.posts));
  }
  if (t !== "node" && wanted("minca hosting")) {
    const space = await hostingSetup(s.url, { batches: SIZES.batches, perBatch: SIZES.perBatch, host: t !== "bare" });
    const app = await withCpu(s, () =>
      costed(
        t,
        s,
        "hosted versions",
        () => hostingAppends(s.url, space),
        (r) => r.versions,
        1,
      ),
    );
    record(`minca hosting: version appends, ${SIZES.perBatch} per POST`, "versions/s", true, t, app.result.perSecond);
    record("minca hosting: CPU per version appended", "ms", false, t, app.cpuMs / app.result.versions);
    const pages = await hostingPages(s.url, space, { reads: SIZES.reads });
    record(`minca hosting: read of a page of ${SIZES.perBatch} versions`, "ms", false, t, pages.msPerPage);
  }
  if (wanted("tally connect")) {
    // The baselines do not authenticate: their figure is what a connect and a register cost
    // without the challenge's check (the Schnorr verify, about 1.25 ms), the platform's floor.
    // New users first (each one's object is made by its register), then the same users again:
    // returning users, whose objects exist.
    const users = Array.from({ length: SIZES.registers }, newUser);
    for (const who of ["new user", "returning user"]) {
      const rg = await withCpu(s, () => registers(s.url, { users, concurrency: SIZES.concurrency }));
      record(
        `tally connect and register, ${who} (challenge + Schnorr verify), ${SIZES.concurrency} at a time`,
        "registers/s",
        true,
        t,
        rg.result.perSecond,
      );
      record(`tally CPU per connect and register, ${who}`, "ms", false, t, rg.cpuMs / SIZES.registers);
    }
  }
}

async function start(t: Target): Promise<Server> {
  if (t === "bare") return startBareDo();
  if (t === "node") return startNodeRelay();
  // The bench drives the relay from one address; naming a trusted proxy header lets it speak as
  // several clients where one would pass a per-client rate limit (hosting appends: BENCHMARKS.md).
  return startRelay({ target: t === "wrangler" ? "wrangler" : "workerd", env: { TRUSTED_PROXY_HEADER: BENCH_CLIENT_HEADER } });
}

/**
 * Idle devices (bench/idle.ts), on a fresh relay and a fresh (b), one after the other: a crowd
 * grown to each of IDLE_COUNTS, memory per device after the objects hibernate and CPU per idle
 * device per minute (the median of 3 windows of 30 s, which together span the relay's 90 s idle
 * alarm). Once per run, not per round: 10,000 registers take minutes.
 */
async function measureIdle(): Promise<void> {
  for (const t of ["relay", "bare", "node"] as const) {
    process.stderr.write(`idle devices: ${t}, fresh server\n`);
    const s = t === "relay" ? await startRelay({ target: "workerd" }) : t === "bare" ? await startBareDo() : await startNodeRelay();
    try {
      const { steps, stopped } = await idleDevices(s, {
        counts: IDLE_COUNTS,
        concurrency: 4,
        settleMs: 20_000,
        samples: 3,
        sampleMs: 30_000,
        log: (line) => process.stderr.write(`  ${t}: ${line}\n`),
        // The relay counts its objects' wakes (/metrics); what reading /metrics itself enters is left out
        // (the stats object, and the policy object when the Worker's cache of its lists has expired).
        wakes: t === "relay" ? () => relayWakes(s.url) : undefined,
      });
      if (stopped) process.stderr.write(`  ${t}: stopped growing: ${stopped}\n`);
      for (const [k, st] of steps.entries()) {
        const n = st.devices.toLocaleString("en-US");
        record(`tally idle devices, ${n}: memory per device after hibernation`, "kB", false, t, st.kbPerDevice);
        if (k > 0) {
          // What each device added since the previous step costs: memory the first crowd's
          // registers left behind (freed by evicted objects, kept by the allocator) is reused.
          const prev = steps[k - 1];
          const added = (st.kbPerDevice * st.devices - prev.kbPerDevice * prev.devices) / (st.devices - prev.devices);
          record(`tally idle devices, ${n}: memory per device added since ${prev.devices.toLocaleString("en-US")}`, "kB", false, t, added);
        }
        record(`tally idle devices, ${n}: memory per device 20 s after the last register`, "kB", false, t, st.settledKbPerDevice);
        record(
          `tally idle devices, ${n}: CPU per idle device per minute (median of ${st.cpuSamples.length} windows)`,
          "ms",
          false,
          t,
          median(st.cpuSamples),
        );
        // Every ping should be answered; on a saturated machine some answers come late. Recorded,
        // not fatal: the memory and CPU figures stand, and the share says how saturated it was.
        record(`tally idle devices, ${n}: pings answered during the samples`, "%", true, t, (100 * st.pongs) / Math.max(1, st.pings));
        if (st.wakesPerDeviceHour !== null) {
          record(`tally idle devices, ${n}: object wakes per idle device per hour`, "wakes", false, t, st.wakesPerDeviceHour);
          record(
            `tally idle devices, ${n}: estimated Cloudflare cost per 1,000 idle devices per month`,
            "USD",
            false,
            t,
            idleMonthlyCostPer1000(st.wakesPerDeviceHour),
          );
        }
        if (st.pongs < st.pings * 0.99) process.stderr.write(`  ${t}: ${st.pings} pings, ${st.pongs} answered (late or lost)\n`);
      }
    } finally {
      await s.stop();
    }
  }
}

/** Objects a request to /metrics itself enters: the stats object, and the policy object (the Worker's cache of its lists). */
const METRICS_READ = new Set(["RelayStats", "RelayPolicy"]);

/** The relay's object wakes so far, but those reading /metrics causes. */
async function relayWakes(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let n = 0;
  for (const line of text.split("\n")) {
    const m = /^edge_relay_object_wakes_total\{class="([^"]+)",cause="[^"]+"\} (\d+)$/.exec(line);
    if (m && !METRICS_READ.has(m[1])) n += Number(m[2]);
  }
  return n;
}

async function main() {
  if (onlyReconcile) targets.length = 0;
  else if (!values["no-build"]) buildWorker();
  if (onlyIdle) targets.length = 0;
  const servers = {} as Record<Target, Server>;
  try {
    for (const t of targets) servers[t] = await start(t);
    // Warm-up: the first connections compile code and open SQLite files.
    for (const t of targets) await onlineDelivery(servers[t].url, { pairs: 4, inFlight: 4, perSender: 20 });
    for (let r = 0; r < rounds; r++) {
      // Turn the order each round, so no server always follows another's leftovers.
      const order = targets.map((_, k) => targets[(k + r) % targets.length]);
      for (const t of order) {
        process.stderr.write(`round ${r + 1}/${rounds}: ${t}\n`);
        await measure(t, servers[t]);
      }
    }
  } finally {
    for (const t of targets) await servers[t]?.stop();
  }
  // Servers of their own, started for the measurement: the relay and (a), taking turns.
  // (The smoke run starts the relay's alone: each start costs seconds.)
  const fresh: FreshTarget[] = smoke ? ["relay"] : ["relay", "bare"];
  for (let r = 0; r < rounds; r++) {
    for (const t of r % 2 ? [...fresh].reverse() : fresh) {
      if (wanted("tally memory")) {
        process.stderr.write(`round ${r + 1}/${rounds}: ${t}, fresh server, idle memory\n`);
        const kb = await freshIdleMemory(t, { count: SIZES.idle, idleMs: smoke ? 100 : 5000 });
        record(`tally memory per idle registered connection (fresh server, ${SIZES.idle} connections)`, "kB", false, t, kb);
      }
      if (wanted("tally cold")) {
        process.stderr.write(`round ${r + 1}/${rounds}: ${t}, restarted server, cold start\n`);
        const cold = await coldStart(t, { count: SIZES.cold });
        record(
          "tally cold start: envelope to an evicted user's object, its first stored, until queued, p50",
          "ms",
          false,
          t,
          cold.first.p50,
        );
        record("tally cold start: its first stored, p99", "ms", false, t, cold.first.p99);
        record("tally cold start: envelope to an evicted user's object with envelopes stored, p50", "ms", false, t, cold.stored.p50);
        record("tally cold start: with envelopes stored, p99", "ms", false, t, cold.stored.p99);
      }
    }
  }
  if (!smoke && (onlyIdle || !values.only)) await measureIdle();
  if (wanted("bundle")) {
    const b = bundleSizes();
    record("bundle: the Worker (wrangler deploy --dry-run)", "kB", false, "relay", b.worker / 1000);
    record("bundle: the Worker, gzip", "kB", false, "relay", b.workerGzip / 1000);
    record("bundle: the browser client (demo page script)", "kB", false, "relay", b.web / 1000);
    record("bundle: the browser client, gzip", "kB", false, "relay", b.webGzip / 1000);
  }
  const out = table(targets);
  if (!onlyReconcile) console.log(out);

  const recon: ReconcileResult[] = [];
  if (wanted("reconcil")) {
    const ns = smoke ? [1_000] : [1_000, 10_000, 100_000];
    const ds = smoke ? [1, 10] : [1, 10, 100, 1_000];
    for (const n of ns) for (const d of ds) for (const cap of ["recon1", "recon2"] as const) recon.push(reconcileRun(n, d, cap));
    // negentropy's published case, 10^6 items with 1 difference, and 100 (minutes, 1.6 GB in this process).
    if (values.big) for (const d of [1, 100]) for (const cap of ["recon1", "recon2"] as const) recon.push(reconcileRun(1_000_000, d, cap));
    console.log(`\n${reconcileTable(recon)}`);
  }

  // Reopening a Passnote database of 100,000 records (SQLite store): in this process, once.
  if (!smoke && wanted("passnote store")) console.log(`\n${storeReopenTable(await storeReopen(100_000))}`);

  if (!smoke && recon.length) writeReconcile(recon);
  if (!smoke && !values.only) writeBaselines(out, rounds);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
