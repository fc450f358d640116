// `npx tsx bench/ab.ts --a DIR --b DIR`: CPU per connect and register (new users, then the same
// users again) on two checkouts of the relay side by side, each under `workerd serve` as
// `npm start` runs it, rounds alternating which goes first, so load that comes and goes on a
// shared machine falls on both alike. Prints each round's figure and the ratio b ÷ a of the
// medians and of the means. Each DIR is a checkout with node_modules and a built Worker
// (`npm run build` in it); its own test/helpers/relay-process.ts starts it. A way to judge one
// change to the register path, where the bench has no baseline to divide by.
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { registers } from "./tally";
import { treeCpuMs } from "./cpu";
import { newUser } from "../test/helpers/tally";

const { values } = parseArgs({
  options: { a: { type: "string" }, b: { type: "string" }, rounds: { type: "string" }, users: { type: "string" } },
});
if (!values.a || !values.b) throw new Error("usage: tsx bench/ab.ts --a DIR --b DIR [--rounds 5] [--users 100]");
const rounds = Number(values.rounds ?? 5);
const n = Number(values.users ?? 100);

type Start = (o: { target: "workerd" }) => Promise<{ url: string; pid: number; stop(): Promise<unknown> }>;
const starter = async (dir: string): Promise<Start> => (await import(resolve(dir, "test/helpers/relay-process.ts"))).startRelay as Start;

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;

async function main() {
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
  for (const who of ["new", "returning"]) {
    const A = res.get(`a ${who}`)!;
    const B = res.get(`b ${who}`)!;
    const each = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(" ");
    console.log(
      `${who} user, CPU per connect and register: a ${median(A).toFixed(2)} ms (${each(A)}), b ${median(B).toFixed(2)} ms (${each(B)}); ` +
        `b ÷ a: ${(median(B) / median(A)).toFixed(2)} of medians, ${(mean(B) / mean(A)).toFixed(2)} of means`,
    );
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
