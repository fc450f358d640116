// clients/listeners.ts: listeners by event, in the order added, each removable by what `on` returned.
import { describe, expect, it } from "vitest";
import { Listeners } from "../../../clients/listeners";

interface Events {
  a: (n: number) => void;
  b: () => void;
}

describe("Listeners", () => {
  it("lists an event's listeners in the order added, and only that event's", () => {
    const l = new Listeners<Events>();
    const calls: string[] = [];
    l.on("a", (n) => void calls.push(`first ${n}`));
    l.on("a", (n) => void calls.push(`second ${n}`));
    l.on("b", () => void calls.push("b"));
    for (const fn of l.of("a")) fn(1);
    expect(calls).toEqual(["first 1", "second 1"]);
    expect([...l.of("b")]).toHaveLength(1);
  });

  it("the function `on` returned removes that listener alone", () => {
    const l = new Listeners<Events>();
    const calls: number[] = [];
    const off = l.on("a", (n) => void calls.push(n));
    l.on("a", (n) => void calls.push(n * 10));
    off();
    for (const fn of l.of("a")) fn(2);
    expect(calls).toEqual([20]);
  });
});
