// Out of resources, refuse; never stop: which runtime errors are answered 503 unavailable.
import { describe, expect, it } from "vitest";
import { outOfResources } from "../../../workers/out-of-resources";

describe("outOfResources", () => {
  it("out of resources, 503 not 500: SQLite's CANTOPEN, EMFILE, ENFILE and memory errors are out of resources, also as a cause", () => {
    for (const m of [
      "SQLITE_CANTOPEN: unable to open database file",
      "kj/filesystem-disk-unix.c++:1703: failed: open(...): Too many open files",
      "accept(): EMFILE",
      "ENFILE: file table overflow",
      "Durable Object is overloaded. Too many requests queued.",
      "Worker exceeded its memory limit",
      "internal error; reference = e3r2if5k489sopk5uidtg4rj",
      "Too many open files",
    ])
      expect(outOfResources(new Error(m)), m).toBe(true);
    expect(outOfResources(new Error("internal error", { cause: new Error("SQLITE_CANTOPEN") }))).toBe(true);
  });

  it("other errors stay 500: a bug is not a resource", () => {
    for (const e of [new Error("Cannot read properties of undefined"), new TypeError("x is not a function"), "boom", null, undefined, 42])
      expect(outOfResources(e)).toBe(false);
  });
});
