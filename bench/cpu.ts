// CPU time (user + system) used by a process and all its descendants, from /proc (Linux). Unlike
// wall-clock throughput, it hardly moves when other work shares the machine.
import { readdirSync, readFileSync } from "node:fs";

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

function stat(pid: number): { ppid: number; ticks: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    // After "(comm) ": state ppid ... utime is field 14, stime 15 (1-based over the whole line).
    return { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) };
  } catch {
    return null;
  }
}

/** `root` and every process descended from it. */
function tree(root: number): number[] {
  const all = new Map<number, { ppid: number; ticks: number }>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const st = stat(Number(name));
    if (st) all.set(Number(name), st);
  }
  const out: number[] = [];
  const todo = [root];
  const seen = new Set<number>();
  while (todo.length) {
    const pid = todo.pop()!;
    if (seen.has(pid) || !all.has(pid)) continue;
    seen.add(pid);
    out.push(pid);
    for (const [child, st] of all) if (st.ppid === pid) todo.push(child);
  }
  return out;
}

/** Milliseconds of CPU used so far by `root` and every process descended from it. */
export function treeCpuMs(root: number): number {
  let ticks = 0;
  for (const pid of tree(root)) ticks += stat(pid)?.ticks ?? 0;
  return (ticks * 1000) / TICKS_PER_SECOND;
}

/** Resident memory (kB) of `root` and every process descended from it. */
export function treeRssKb(root: number): number {
  let kb = 0;
  for (const pid of tree(root)) {
    try {
      kb += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
    } catch {
      // gone
    }
  }
  return kb;
}

/** Runs `work` against a server (its process `pid`), also answering the CPU its whole process tree used meanwhile. */
export async function withCpu<T>(s: { pid: number }, work: () => Promise<T>): Promise<{ result: T; cpuMs: number }> {
  const before = treeCpuMs(s.pid);
  const result = await work();
  return { result, cpuMs: treeCpuMs(s.pid) - before };
}
