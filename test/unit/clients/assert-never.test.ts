// "assertNever in the clients' switches over relay frames": a frame type without its case is a
// type error (the typecheck runs this file), and a value that reaches the end anyway throws.
import { describe, expect, it } from "vitest";
import { assertNever } from "../../../clients/assert-never";

type Frame = { type: "a" } | { type: "b" };

function handled(f: Frame): string {
  switch (f.type) {
    case "a":
      return "a";
    default:
      // @ts-expect-error: "b" has no case, so `f` is not never here
      return assertNever(f, "frame");
  }
}

describe("assertNever", () => {
  it("a switch missing a frame type does not typecheck, and throws when it is reached", () => {
    expect(handled({ type: "a" })).toBe("a");
    expect(() => handled({ type: "b" })).toThrow('unhandled frame: {"type":"b"}');
  });
});
