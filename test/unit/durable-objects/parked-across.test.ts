// durable-objects/base/parked-across.ts: the relay-wide count of each client's parked sockets is
// the sum of what each object last reported (whole counts, so a repeated or replaced report never
// counts twice), and a report whose sockets' deadlines have passed stops counting.
import { describe, expect, it } from "vitest";
import { parkedAcross, reportParked } from "../../../durable-objects/base/parked-across";

describe("parked sockets counted across the objects of an isolate", () => {
  it("sums the objects' last reports per client; a report replaces the object's last one; an empty one removes it", () => {
    const now = Date.now();
    const until = now + 60_000;
    reportParked(
      "obj-a",
      new Map([
        ["198.51.100.1", 3],
        ["198.51.100.2", 1],
      ]),
      until,
    );
    reportParked("obj-b", new Map([["198.51.100.1", 2]]), until);
    expect(parkedAcross("198.51.100.1", now)).toBe(5);
    expect(parkedAcross("198.51.100.2", now)).toBe(1);
    reportParked("obj-a", new Map([["198.51.100.1", 1]]), until); // the same object again: replaced, not added
    expect(parkedAcross("198.51.100.1", now)).toBe(3);
    expect(parkedAcross("198.51.100.2", now)).toBe(0);
    reportParked("obj-a", new Map(), until);
    reportParked("obj-b", new Map(), until);
    expect(parkedAcross("198.51.100.1", now)).toBe(0);
  });

  it("a report past its sockets' deadlines (an evicted object that never woke) stops counting", () => {
    const now = Date.now() + 10 * 60_000; // past any earlier test's sweep
    reportParked("obj-gone", new Map([["198.51.100.3", 4]]), now + 5_000);
    expect(parkedAcross("198.51.100.3", now)).toBe(4);
    expect(parkedAcross("198.51.100.3", now + 5_000)).toBe(0);
    // once dropped, a fresh report from the object counts again
    reportParked("obj-gone", new Map([["198.51.100.3", 1]]), now + 20_000);
    expect(parkedAcross("198.51.100.3", now + 10_000)).toBe(1);
  });
});
