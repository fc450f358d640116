// The launcher's bound on starting workerd again after it died on its own (scripts/runtime-process.ts).
import { describe, expect, it } from "vitest";
import { RESTART_WINDOW_MS, RestartBudget } from "../../../scripts/runtime-process.ts";

describe("the runtime's restart bound", () => {
  it("a runtime that dies on its own is started again up to RELAY_RESTARTS times in any minute, then not", () => {
    const b = new RestartBudget(3);
    expect([b.allow(0), b.allow(1_000), b.allow(2_000), b.allow(3_000)]).toEqual([true, true, true, false]);
    // A minute after the first start, one more is allowed again: the bound slides.
    expect(b.allow(RESTART_WINDOW_MS)).toBe(true);
    expect(b.allow(RESTART_WINDOW_MS + 500)).toBe(false);
  });

  it("RELAY_RESTARTS=0: never started again (the launcher exits for a service manager)", () => {
    expect(new RestartBudget(0).allow(0)).toBe(false);
  });
});
