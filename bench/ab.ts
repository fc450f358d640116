// `npx tsx bench/ab.ts --a DIR --b DIR [--load register|online|store|mailbox|cold]`: CPU per connect
// and register (new users, then the same users again), per envelope delivered online (20 pairs, 8
// in flight, registers excluded), per envelope stored and flushed (10 senders, 100 each), the cold
// start of a user with envelopes stored (bench/fresh.ts; its latency, not CPU), or per
// mailbox POST (50 to one topic, then 5 to each of 100 fresh topics; the rate is one topic's) on two
// checkouts of the relay side by side, each under `workerd serve` as
// `npm start` runs it, rounds alternating which goes first, so load that comes and goes on a
// shared machine falls on both alike. Prints each round's figure and the ratio b ÷ a of the
// medians and of the means. Each DIR is a checkout with node_modules and a built Worker
// (`npm run build` in it); its own test/helpers/relay-process.ts starts it. A way to judge one
// change to the register path, where the bench has no baseline to divide by.
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { connect, flushTo, onlineDelivery, registers, storeFor } from "./tally";
import { coldStart } from "./fresh";
import { treeCpuMs } from "./cpu";
import { mailboxPosts } from "./minca";
import { newUser } from "../test/helpers/tally";

const { values } = parseArgs({
  options: {
    a: { type: "string" },
    b: { type: "string" },
    rounds: { type: "string" },
    users: { type: "string" },
    load: { type: "string" },
  },
});
const load = values.load ?? "register";
if (!["register", "online", "store", "mailbox", "cold"].includes(load))
  throw new Error("--load is register, online, store, mailbox or cold");
if (!values.a || !values.b) throw new Error("usage: tsx bench/ab.ts --a DIR --b DIR [--rounds 5] [--users 100]");
const rounds = Number(values.rounds ?? 5);
const n = Number(values.users ?? 100);

type Start = (o: { target: "workerd"; dataDir?: string }) => Promise<{ url: string; pid: number; stop(): Promise<unknown> }>;
const starter = async (dir: string): Promise<Start> => (await import(resolve(dir, "test/helpers/relay-process.ts"))).startRelay as Start;

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;

async function main() {
  if (load === "cold") return cold();
  const a = await (await starter(values.a!))({ target: "workerd" });
  const b = await (await starter(values.b!))({ target: "workerd" });
  const res = new Map<string, number[]>();
  try {
    for (const s of [a, b]) await registers(s.url, { users: Array.from({ length: 20 }, newUser), concurrency: 8 }); // warm-up
    for (let r = 0; r < rounds; r++) {
      const order =
        r % 2 === 0
          ? ([
              ["a", a],
              ["b", b],
            ] as const)
          : ([
              ["b", b],
              ["a", a],
            ] as const);
      for (const [name, s] of order) {
        if (load !== "register") {
          const k = `${name} ${load}`;
          const r = await perEnvelope(s.url, s.pid);
          res.set(k, [...(res.get(k) ?? []), r.cpuMs]);
          res.set(`${name} rate`, [...(res.get(`${name} rate`) ?? []), r.perSecond]);
          await new Promise((done) => setTimeout(done, 3_000)); // the objects' stats reports go
          continue;
        }
        const users = Array.from({ length: n }, newUser);
        for (const who of ["new", "returning"]) {
          const before = treeCpuMs(s.pid);
          await registers(s.url, { users, concurrency: 8 });
          const k = `${name} ${who}`;
          res.set(k, [...(res.get(k) ?? []), (treeCpuMs(s.pid) - before) / n]);
        }
        await new Promise((done) => setTimeout(done, 3_000)); // the objects' stats reports go
      }
    }
  } finally {
    await a.stop();
    await b.stop();
  }
  for (const who of load === "register" ? ["new", "returning"] : [load, "rate"]) {
    const A = res.get(`a ${who}`)!;
    const B = res.get(`b ${who}`)!;
    const each = (xs: number[]) => xs.map((x) => x.toFixed(x < 10 ? 2 : 0)).join(" ");
    console.log(
      `${load === "register" ? `${who} user, CPU per connect and register` : who === "rate" ? `${load === "mailbox" ? "POSTs" : "envelopes"}/s, ${load}` : `CPU per ${load === "mailbox" ? "POST" : "envelope"}, ${load}`}: a ${median(A).toFixed(2)} ms (${each(A)}), b ${median(B).toFixed(2)} ms (${each(B)}); ` +
        `b ÷ a: ${(median(B) / median(A)).toFixed(2)} of medians, ${(mean(B) / mean(A)).toFixed(2)} of means`,
    );
  }
}

/**
 * --load cold: each round, on each checkout in turn, the bench's cold start (bench/fresh.ts) with
 * 30 users who have envelopes stored: ms until `queued` for an envelope to each after a restart.
 */
async function cold(): Promise<void> {
  const res = new Map<string, number[]>();
  for (let r = 0; r < rounds; r++) {
    for (const name of r % 2 === 0 ? ["a", "b"] : ["b", "a"]) {
      const start = await starter(name === "a" ? values.a! : values.b!);
      const { stored } = await coldStart((dataDir) => start({ target: "workerd", dataDir }), { count: 30 });
      for (const p of ["p50", "p99"] as const) res.set(`${name} ${p}`, [...(res.get(`${name} ${p}`) ?? []), stored[p]]);
    }
  }
  for (const p of ["p50", "p99"]) {
    const A = res.get(`a ${p}`)!;
    const B = res.get(`b ${p}`)!;
    console.log(
      `cold start with envelopes stored, ${p}: a ${median(A).toFixed(2)} ms, b ${median(B).toFixed(2)} ms; b ÷ a: ${(median(B) / median(A)).toFixed(2)} of medians, ${(mean(B) / mean(A)).toFixed(2)} of means`,
    );
  }
}

/** CPU of the relay's process tree per envelope, without the registers: the online load's CPU less
 * that of its connects (measured alone first, on the same number of fresh users). */
async function perEnvelope(url: string, pid: number): Promise<{ cpuMs: number; perSecond: number }> {
  if (load === "online") {
    const o = { pairs: 20, inFlight: 8, perSender: 150 };
    const c0 = treeCpuMs(pid);
    const conns = await Promise.all(Array.from({ length: o.pairs * 2 }, () => connect(url, newUser())));
    await Promise.all(conns.map((c) => c.close()));
    const connectMs = treeCpuMs(pid) - c0;
    const before = treeCpuMs(pid);
    const r = await onlineDelivery(url, o);
    return { cpuMs: (treeCpuMs(pid) - before - connectMs) / r.messages, perSecond: r.perSecond };
  }
  if (load === "mailbox") {
    const before = treeCpuMs(pid);
    const one = await mailboxPosts(url, { topics: 1, perTopic: 50, inFlight: 8 });
    const many = await mailboxPosts(url, { topics: 100, perTopic: 5, inFlight: 8 });
    return { cpuMs: (treeCpuMs(pid) - before) / (one.posts + many.posts), perSecond: one.perSecond };
  }
  const before = treeCpuMs(pid);
  const st = await storeFor(url, { senders: 10, perSender: 100, inFlight: 8 });
  await flushTo(url, st.to, st.stored);
  return { cpuMs: (treeCpuMs(pid) - before) / st.stored, perSecond: st.storePerSecond };
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
