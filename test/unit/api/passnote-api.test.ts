// The passnote entry's exported surface is on purpose: the checked-in report (docs/api/passnote.api.txt)
// is what a fresh one says. After a deliberate change: node --import tsx scripts/api-report.ts.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { apiReport, reportPath } from "../../../scripts/api-report";

describe("the API report of edge-relay/passnote", () => {
  it("the exported surface of edge-relay/passnote-sqlite matches its checked-in API report", () => {
    expect(apiReport("passnote-sqlite")).toBe(readFileSync(reportPath("passnote-sqlite"), "utf8"));
  }, 60_000);

  it("the exported surface matches the checked-in API report", () => {
    expect(apiReport("passnote")).toBe(readFileSync(reportPath("passnote"), "utf8"));
  }, 60_000);
});
