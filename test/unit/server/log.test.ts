import { describe, expect, it } from "vitest";
import { logLine } from "../../../server/log";

describe("log lines", () => {
  it("each is one JSON object with level, msg and the fields; an Error becomes name, message and stack", () => {
    const line = logLine("error", "delivery failed", { request_id: "r-1", err: new TypeError("boom") });
    expect(line).not.toContain("\n");
    const o = JSON.parse(line);
    expect(o).toMatchObject({ level: "error", msg: "delivery failed", request_id: "r-1", err: { name: "TypeError", message: "boom" } });
    expect(o.err.stack).toContain("boom");
  });
  it("a field JSON cannot hold (a BigInt) still leaves a JSON line with level and msg", () => {
    const o = JSON.parse(logLine("warn", "odd", { n: 1n }));
    expect(o).toMatchObject({ level: "warn", msg: "odd" });
  });
});
