// `npm run bench`: every figure under both runtimes, side by side, in one run: `wrangler dev`
// (development) and `workerd serve` as `npm start` runs it (self-hosting). Both relays are up at
// once and each figure is measured on one, then the other, round after round, and the median of
// each is shown, so load that comes and goes on a shared machine falls on both alike. The relay's
// CPU per envelope (its whole process tree) hardly depends on such load at all.
//
//   npm run bench                 full run; writes bench/results/runtimes.md
//   npm run bench -- --smoke      a few seconds, one round, nothing written (part of npm test)
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { buildWorker } from "../scripts/build";
import { startRelay, type RelayProcess, type RelayTarget } from "../test/helpers/relay-process";
import { treeCpuMs } from "./cpu";
import { onlineDelivery, registers, storeThenFlush } from "./tally";

const { values } = parseArgs({ options: { smoke: { type: "boolean" }, rounds: { type: "string" } } });
const smoke = values.smoke === true;
const rounds = Number(values.rounds ?? (smoke ? 1 : 3));

const SIZES = smoke
  ? { pairs: 4, inFlight: 4, perSender: 20, senders: 2, storePer: 20, registers: 10, concurrency: 2 }
  : { pairs: 20, inFlight: 8, perSender: 150, senders: 10, storePer: 100, registers: 100, concurrency: 8 };

const TARGETS: RelayTarget[] = ["wrangler", "workerd"];

interface Figure {
  name: string;
  unit: string;
  /** Whether more is better (throughput) or less (latency, time, CPU). */
  higherIsBetter: boolean;
  samples: Record<RelayTarget, number[]>;
}

const figures: Figure[] = [];
function record(name: string, unit: string, higherIsBetter: boolean, target: RelayTarget, value: number) {
  let f = figures.find((x) => x.name === name);
  if (!f) figures.push((f = { name, unit, higherIsBetter, samples: { wrangler: [], workerd: [] } }));
  f.samples[target].push(value);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
};

/** Runs `work` against the relay, also recording the relay's CPU per unit of work. */
async function withCpu<T>(relay: RelayProcess, work: () => Promise<T>): Promise<{ result: T; cpuMs: number }> {
  const before = treeCpuMs(relay.pid);
  const result = await work();
  return { result, cpuMs: treeCpuMs(relay.pid) - before };
}

async function measure(target: RelayTarget, relay: RelayProcess): Promise<void> {
  const on = await withCpu(relay, () =>
    onlineDelivery(relay.url, { pairs: SIZES.pairs, inFlight: SIZES.inFlight, perSender: SIZES.perSender }),
  );
  const online = on.result;
  record(`online delivery, ${SIZES.pairs} pairs, ${SIZES.inFlight} in flight each`, "envelopes/s", true, target, online.perSecond);
  record("online delivery latency p50", "ms", false, target, online.p50);
  record("online delivery latency p99", "ms", false, target, online.p99);
  record("relay CPU per envelope delivered online (incl. connecting)", "ms", false, target, on.cpuMs / online.messages);

  const st = await withCpu(relay, () => storeThenFlush(relay.url, { senders: SIZES.senders, perSender: SIZES.storePer, inFlight: SIZES.inFlight }));
  const sf = st.result;
  record(`offline store, ${sf.stored} envelopes from ${SIZES.senders} senders`, "envelopes/s", true, target, sf.storePerSecond);
  record(`flush of ${sf.stored} stored envelopes on register`, "ms", false, target, sf.flushMs);
  record("relay CPU per envelope stored and flushed", "ms", false, target, st.cpuMs / sf.stored);

  const rg = await withCpu(relay, () => registers(relay.url, { count: SIZES.registers, concurrency: SIZES.concurrency }));
  record(`connect and register (new users), ${SIZES.concurrency} at a time`, "registers/s", true, target, rg.result.perSecond);
  record("relay CPU per connect and register", "ms", false, target, rg.cpuMs / SIZES.registers);
}

function fmt(v: number): string {
  if (Number.isNaN(v)) return "-";
  return v >= 100 ? Math.round(v).toLocaleString("en-US") : v.toFixed(v >= 10 ? 1 : 2);
}

function table(): string {
  const rows = figures.map((f) => {
    const w = median(f.samples.wrangler);
    const d = median(f.samples.workerd);
    // How many times better workerd serve is: above 1 is better, for either kind of figure.
    const ratio = f.higherIsBetter ? d / w : w / d;
    return `| ${f.name} | ${f.unit} | ${fmt(w)} | ${fmt(d)} | ${Number.isFinite(ratio) ? `${ratio.toFixed(2)}x` : "-"} |`;
  });
  return [
    "| figure | unit | wrangler dev | workerd serve | workerd serve, times better |",
    "| --- | --- | ---: | ---: | ---: |",
    ...rows,
  ].join("\n");
}

async function main() {
  buildWorker();
  const relays = {} as Record<RelayTarget, RelayProcess>;
  try {
    for (const t of TARGETS) relays[t] = await startRelay({ target: t });
    // Warm-up: the first connections compile code and open SQLite files.
    for (const t of TARGETS) await onlineDelivery(relays[t].url, { pairs: 4, inFlight: 4, perSender: 20 });
    for (let r = 0; r < rounds; r++) {
      // Alternate which runtime goes first, so neither always follows the other's leftovers.
      for (const t of r % 2 ? [...TARGETS].reverse() : TARGETS) {
        process.stderr.write(`round ${r + 1}/${rounds}: ${t}\n`);
        await measure(t, relays[t]);
      }
    }
  } finally {
    for (const t of TARGETS) await relays[t]?.stop();
  }
  const out = table();
  console.log(out);
  if (!smoke) {
    const dir = join(import.meta.dirname, "results");
    mkdirSync(dir, { recursive: true });
    const md =
      `# The relay under wrangler dev and under workerd serve\n\n` +
      `Measured by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)}: medians of ${rounds} rounds, the two runtimes ` +
      `alternating figure by figure, on a 2-core machine that the relays share with the load generator (and with whatever else ` +
      `runs there). CPU figures count the relay's whole process tree.\n\n${out}\n`;
    writeFileSync(join(dir, "runtimes.md"), md);
    process.stderr.write(`written to bench/results/runtimes.md\n`);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
