// The surface on purpose: the exported names and types of edge-relay/tally are the checked-in API
// report (docs/api/tally.api.txt, made by scripts/api-report.ts), so a change to the surface is a
// visible diff; and no test hook is part of it.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { apiReport, reportPath } from "../../../../scripts/api-report";

describe("the SDK's surface", () => {
  const now = apiReport("tally");
  it("the surface on purpose: edge-relay/tally exports what its checked-in API report says (regenerate with node --import tsx scripts/api-report.ts)", () => {
    expect(now).toBe(readFileSync(reportPath("tally"), "utf8"));
  });

  it("no test hook is public: no raw sockets, nothing named for tests", () => {
    expect(now).not.toMatch(/^\s+(socket|sockets)\b/m);
    expect(now).not.toMatch(/test/i);
  }, 60_000);
});
