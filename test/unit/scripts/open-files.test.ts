// Near the open-file limit, refuse new connections; never reach it (docs/operating.md, "Open
// files"): the launcher counts the runtime's descriptors and tells the Worker when new upgrades
// must be refused and when they may be taken again, so devices connecting never bring workerd to
// the limit, where an accept() that fails ends it.
import { describe, expect, it } from "vitest";
import {
  FILES_POLL_MAX_MS,
  FILES_POLL_MIN_MS,
  crowdedNext,
  devicesAllowed,
  filesMargin,
  pollDelayMs,
  watchOpenFiles,
} from "../../../scripts/open-files";

describe("open files: refuse before the limit", () => {
  it("new upgrades are refused from limit - margin open files, and taken again only below limit - 1.5 margins (no flapping)", () => {
    const limit = 1024;
    const m = filesMargin(limit);
    expect(m).toBe(256);
    expect(crowdedNext(false, limit - m - 1, limit)).toBe(false);
    expect(crowdedNext(false, limit - m, limit)).toBe(true);
    expect(crowdedNext(true, limit - m - 1, limit)).toBe(true);
    expect(crowdedNext(true, limit - m - m / 2 + 1, limit)).toBe(true);
    expect(crowdedNext(true, limit - m - m / 2, limit)).toBe(false);
    expect(filesMargin(20_000)).toBe(1_000);
    expect(devicesAllowed(20_000)).toBe(Math.floor((20_000 - 1_000 - 256) / 2));
  });

  it("the count is read more often the nearer the limit: every 5 s far from it, every 100 ms close to it, once a second while crowded", () => {
    expect(pollDelayMs(false, 100, 20_000)).toBe(FILES_POLL_MAX_MS);
    expect(pollDelayMs(false, 18_900, 20_000)).toBe(FILES_POLL_MIN_MS);
    const mid = pollDelayMs(false, 16_000, 20_000);
    expect(mid).toBeGreaterThan(FILES_POLL_MIN_MS);
    expect(mid).toBeLessThan(FILES_POLL_MAX_MS);
    expect(pollDelayMs(true, 19_500, 20_000)).toBe(1_000);
  });

  it("the watch tells the Worker once when the runtime grows crowded, nothing while it stays so, once when it is clear again, and again after a restart", async () => {
    let open = 100;
    const told: Array<[boolean, number]> = [];
    const timers: Array<() => void> = [];
    const w = watchOpenFiles({
      pid: () => 42,
      limit: 1024,
      count: () => open,
      tell: async (crowded, n) => void told.push([crowded, n]),
      setTimer: (fn) => {
        timers.push(fn);
        return {};
      },
      clearTimer: () => {},
    });
    const step = async (files: number) => {
      open = files;
      await Promise.resolve();
      timers.shift()!();
      await new Promise((r) => setImmediate(r));
    };
    await new Promise((r) => setImmediate(r));
    expect(told).toEqual([]);
    await step(700);
    expect(told).toEqual([]);
    await step(800);
    expect(told).toEqual([[true, 800]]);
    await step(900);
    await step(700);
    expect(told).toEqual([[true, 800]]);
    await step(640);
    expect(told).toEqual([
      [true, 800],
      [false, 640],
    ]);
    await step(800);
    expect(told).toEqual([
      [true, 800],
      [false, 640],
      [true, 800],
    ]);
    // a new runtime starts uncrowded: the state is told to it again
    w.restarted();
    await step(800);
    expect(told.at(-1)).toEqual([true, 800]);
    expect(told).toHaveLength(4);
    w.stop();
  });

  it("a Worker that could not be told (between two lives of the runtime) is told at the next count", async () => {
    let fail = true;
    const told: boolean[] = [];
    const timers: Array<() => void> = [];
    const w = watchOpenFiles({
      pid: () => 42,
      limit: 1024,
      count: () => 900,
      tell: async (crowded) => {
        if (fail) throw new Error("ECONNREFUSED");
        told.push(crowded);
      },
      setTimer: (fn) => {
        timers.push(fn);
        return {};
      },
    });
    await new Promise((r) => setImmediate(r));
    expect(told).toEqual([]);
    fail = false;
    timers.shift()!();
    await new Promise((r) => setImmediate(r));
    expect(told).toEqual([true]);
    w.stop();
  });
});
