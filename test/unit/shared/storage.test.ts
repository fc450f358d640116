// Relay-wide storage totals (docs/hostile.md, "Relay-wide totals"): the settings and the lease
// arithmetic of shared/storage.ts.
import { describe, expect, it } from "vitest";
import { STORAGE_LIMITS } from "../../../shared/limits";
import {
  grantLease,
  leaseBlock,
  leaseKeep,
  leaseRequest,
  parseBytesSetting,
  rowBytes,
  shareAt,
  shareCapacity,
  shareCharge,
  shareWaitMs,
  storageTotals,
} from "../../../shared/storage";

describe("relay-wide storage totals: settings", () => {
  it("STORAGE_*_BYTES take decimal bytes or a binary suffix; empty is the default; anything else is ignored and named", () => {
    expect(parseBytesSetting("")).toBeUndefined();
    expect(parseBytesSetting("12345")).toBe(12345);
    expect(parseBytesSetting("512MiB")).toBe(512 * 2 ** 20);
    expect(parseBytesSetting("2 gib")).toBe(2 * 2 ** 30);
    for (const bad of ["-1", "1.5GiB", "1GB", "lots", "99999999999999999TiB"]) expect(parseBytesSetting(bad)).toBeNull();
    expect(storageTotals({})).toEqual({
      tally: STORAGE_LIMITS.tally_bytes,
      mailbox: STORAGE_LIMITS.mailbox_bytes,
      host: STORAGE_LIMITS.host_bytes,
      invalid: [],
    });
    expect(storageTotals({ STORAGE_MAILBOX_BYTES: "1KiB", STORAGE_HOST_BYTES: "many" })).toEqual({
      tally: STORAGE_LIMITS.tally_bytes,
      mailbox: 1024,
      host: STORAGE_LIMITS.host_bytes,
      invalid: ["STORAGE_HOST_BYTES"],
    });
  });
});

describe("relay-wide storage totals: leases", () => {
  it("a lease block grows with what the object holds, within lease_min_bytes and lease_max_bytes", () => {
    expect(leaseBlock(0)).toBe(STORAGE_LIMITS.lease_min_bytes);
    expect(leaseBlock(1_000_000)).toBe(250_000);
    expect(leaseBlock(100 * 2 ** 20)).toBe(STORAGE_LIMITS.lease_max_bytes);
    expect(leaseRequest(1_000)).toEqual({ need: 1_000, want: 1_000 + STORAGE_LIMITS.lease_min_bytes });
  });

  it("the ledger grants want when it fits, as much as fits when that covers need, and nothing past the total", () => {
    expect(grantLease(0, 1_000_000, 10, 100)).toBe(100);
    expect(grantLease(999_950, 1_000_000, 10, 100)).toBe(50);
    expect(grantLease(999_995, 1_000_000, 10, 100)).toBeNull();
  });

  it("an object keeps its lease while the slack is within two blocks, gives back down to one block past it, and all of it once it holds nothing", () => {
    const block = STORAGE_LIMITS.lease_min_bytes;
    expect(leaseKeep(10_000, 10_000 + 2 * block)).toBe(10_000 + 2 * block);
    expect(leaseKeep(10_000, 10_000 + 3 * block)).toBe(10_000 + block);
    expect(leaseKeep(0, 5 * block)).toBe(0);
  });
});

describe("shares of a total (storage.client_share, storage.sender_share)", () => {
  const DAY = 86_400_000;
  it("a fresh share is full; a store within it is free, one past it waits for the bytes to refill over the period", () => {
    const cap = 1_000;
    const s = shareAt(undefined, cap, 10 * DAY, 0);
    expect(shareWaitMs(s, cap, 10 * DAY, 600)).toBe(0);
    const after = shareCharge(s, 600);
    expect(shareWaitMs(after, cap, 10 * DAY, 600)).toBe(2 * DAY); // 200 bytes short at 100 a day
    expect(shareWaitMs(shareAt(after, cap, 10 * DAY, 2 * DAY), cap, 10 * DAY, 600)).toBe(0);
    expect(shareAt(after, cap, 10 * DAY, 100 * DAY).tokens).toBe(cap); // never more than the share
  });

  it("one store larger than the whole share waits for a full share, not forever", () => {
    const s = shareAt(undefined, 100, DAY, 0);
    expect(shareWaitMs(s, 100, DAY, 5_000)).toBe(0);
    expect(shareWaitMs(shareCharge(s, 5_000), 100, DAY, 5_000)).toBeGreaterThan(DAY);
  });

  it("a share is a fraction of its total, never less than one row", () => {
    expect(shareCapacity(1024 * 1024, 1 / 16)).toBe(65_536);
    expect(shareCapacity(10, 1 / 16)).toBe(rowBytes());
  });
});
