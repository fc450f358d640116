// The figures of `npm run bench` (bench/run.ts): each sampled per server round after round, their
// medians and the relay's ratios to the baselines as tables, and the files a full run writes
// (bench/results/).
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { barChart } from "./chart";
import type { ReconcileResult } from "./reconcile";

export type Target = "relay" | "bare" | "node" | "wrangler";
export const COLUMNS: Record<Target, string> = {
  relay: "relay (workerd serve)",
  bare: "(a) bare DO, workerd",
  node: "(b) Node + ws",
  wrangler: "relay (wrangler dev)",
};

export interface Figure {
  name: string;
  unit: string;
  /** Whether more is better (throughput) or less (latency, time, CPU, memory). */
  higherIsBetter: boolean;
  samples: Partial<Record<Target, number[]>>;
}

export const figures: Figure[] = [];
export function record(name: string, unit: string, higherIsBetter: boolean, target: Target, value: number) {
  let f = figures.find((x) => x.name === name);
  if (!f) {
    f = { name, unit, higherIsBetter, samples: {} };
    figures.push(f);
  }
  f.samples[target] ??= [];
  f.samples[target].push(value);
}

export const median = (xs: number[] | undefined) => {
  if (!xs?.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

export function fmt(v: number): string {
  if (!Number.isFinite(v)) return "-";
  return v >= 100 ? Math.round(v).toLocaleString("en-US") : v.toFixed(v >= 10 ? 1 : 2);
}

/** The relay's value over the baseline's (a plain quotient: read it with the unit's direction). */
export function ratio(f: Figure, base: Target): number {
  return median(f.samples.relay) / median(f.samples[base]);
}

/** The same, oriented so that above 1 means the relay does better. */
export function better(f: Figure, base: Target): number {
  const r = ratio(f, base);
  return f.higherIsBetter ? r : 1 / r;
}

export function table(targets: Target[]): string {
  // With the shared servers left out (--only idle), the columns are the servers that were measured.
  const cols = targets.length ? targets : (["relay", "bare", "node"] as Target[]).filter((c) => figures.some((f) => f.samples[c]));
  const bases = (["bare", "node", "wrangler"] as Target[]).filter((b) => cols.includes(b));
  const label: Record<string, string> = { bare: "relay ÷ (a)", node: "relay ÷ (b)", wrangler: "relay ÷ wrangler dev" };
  const rows = figures.map((f) => {
    const vals = cols.map((c) => fmt(median(f.samples[c])));
    const ratios = bases.map((b) => {
      const r = ratio(f, b);
      return Number.isFinite(r) ? `${r.toFixed(2)}` : "-";
    });
    return `| ${f.name} | ${f.unit} | ${f.higherIsBetter ? "higher" : "lower"} | ${vals.join(" | ")} | ${ratios.join(" | ")} |`;
  });
  return [
    `| figure | unit | better | ${cols.map((c) => COLUMNS[c]).join(" | ")} | ${bases.map((b) => label[b]).join(" | ")} |`,
    `| --- | --- | --- | ${cols.map(() => "---:").join(" | ")} | ${bases.map(() => "---:").join(" | ")} |`,
    ...rows,
  ].join("\n");
}

/** recon1 and recon2 side by side, one row per dataset. */
export function reconcileTable(rs: ReconcileResult[]): string {
  const n = (x: number) => x.toLocaleString("en-US");
  const rows: string[] = [];
  for (const r1 of rs.filter((r) => r.capability === "recon1")) {
    const r2 = rs.find((r) => r.capability === "recon2" && r.n === r1.n && r.d === r1.d);
    if (!r2) continue;
    const both = (f: (r: ReconcileResult) => string) => `${f(r1)} / ${f(r2)}`;
    rows.push(
      `| ${n(r1.n)} | ${n(r1.d)} | ${both((r) => `${r.roundTrips} (${r.flights})`)} | ${both((r) => n(r.bytesPerSide))} | ${n(r1.shipAllBytesPerSide)} | ${both((r) => (r.bytesPerSide / r.shipAllBytesPerSide).toFixed(4))} | ${both((r) => n(r.recordsShipped))} | ${both((r) => fmt(r.ms))} |`,
    );
  }
  return [
    "| records N | differences d | round trips (flights), recon1 / recon2 | bytes per side, recon1 / recon2 | shipping everything, bytes per side | ÷ shipping everything, recon1 / recon2 | records shipped (both sides), recon1 / recon2 | time (ms, both sides in one process), recon1 / recon2 |",
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...rows,
  ].join("\n");
}

const resultsDir = join(import.meta.dirname, "results");
/** The command a run was started with, and the machine it ran on, as a results file says them. */
function measuredBy(): { cmd: string; date: string; machine: string } {
  const args = process.argv.slice(2).join(" ");
  return {
    cmd: `npm run bench${args ? ` -- ${args}` : ""}`,
    date: new Date().toISOString().slice(0, 10),
    machine: `${cpus().length} cores (${cpus()[0]?.model.trim()}), Node ${process.version}`,
  };
}

/** bench/results/reconcile.md: recon1 and recon2 against shipping everything. */
export function writeReconcile(recon: ReconcileResult[]): void {
  const { cmd, date, machine } = measuredBy();
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(
    join(resultsDir, "reconcile.md"),
    `# Range reconciliation, recon1 and recon2, against shipping everything\n\nMeasured by \`${cmd}\` on ${date}, ${machine}. ` +
      `Both capabilities run on the same datasets (bench/reconcile.ts): two stores of N records, d of them different ` +
      `(half on each side, half edits, half new records). Bytes are encoded frames plus their seal (nonce and tag), ` +
      `reconcile and delta messages together; per side is the larger side's. A flight is one side's turn (its deltas ` +
      `and its reply together), the opening probe the first; a round trip is two flights. A last flight of deltas ` +
      `only counts (the exchange is over when they arrive), so recon1 may show one more round trip than the count of reconcile ` +
      `messages alone gave before.\n\n${reconcileTable(recon)}\n`,
  );
}

/** bench/results/baselines.md and baselines.svg: the table of a full run, and its ratios as a chart. */
export function writeBaselines(out: string, rounds: number): void {
  const { cmd, date, machine } = measuredBy();
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(
    join(resultsDir, "baselines.md"),
    `# The relay against its limit (a) and against a Node relay (b)\n\n` +
      `Measured by \`${cmd}\` on ${date}, ${machine}: medians of ${rounds} rounds, the servers taking turns figure ` +
      `group by figure group, all sharing the machine with the load generator (and with whatever else runs there). ` +
      `Ratios are the relay's value divided by the baseline's: read them with the "better" column. CPU figures ` +
      `count each server's whole process tree.\n\n${out}\n`,
  );
  const rows = figures
    .filter((f) => Number.isFinite(ratio(f, "bare")) || Number.isFinite(ratio(f, "node")))
    .map((f) => ({ label: f.name, values: [better(f, "bare"), better(f, "node")] }));
  writeFileSync(
    join(resultsDir, "baselines.svg"),
    barChart(
      `The relay against (a) bare DO and (b) Node + ws, ${date} (above 1: the relay does better)`,
      ["relay vs (a) bare DO on workerd", "relay vs (b) Node + ws"],
      rows,
    ),
  );
  process.stderr.write(`written to bench/results/\n`);
}
