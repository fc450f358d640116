// Relay-wide storage totals set through their settings (docs/hostile.md, "Relay-wide
// totals"), against a relay process of its own started with tiny totals: the information
// document shows them, a second topic's store is refused with the documented error once the first
// holds the total, and /status.json shows what is reserved of each.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRelay, type RelayProcess } from "../helpers/relay-process";
import { waitFor } from "../helpers/wait";
import { STORAGE_LIMITS } from "../../shared/limits";

let relay: RelayProcess;
// Room for the first topic's two items and its database (storage.database_bytes_mailbox), and for
// one more topic's one-byte item and database, but not for a second topic's 30 KB item.
const TOTAL = 240 * 1024;

beforeAll(async () => {
  relay = await startRelay({ env: { STORAGE_MAILBOX_BYTES: "240KiB", STORAGE_TALLY_BYTES: "1MiB" } });
});

afterAll(async () => {
  await relay?.stop();
});

const topic = (name: string) => `${relay.url}/minca/v1/mailbox/storage-e2e-${name}-${Date.now()}`;

describe("relay-wide storage totals, set through STORAGE_*_BYTES", () => {
  it("the information document shows the totals in force (one left unset keeps its default)", async () => {
    const doc = (await (await fetch(`${relay.url}/`, { headers: { accept: "application/json" } })).json()) as any;
    expect(doc.limits.storage).toMatchObject({ mailbox_bytes: TOTAL, tally_bytes: 1024 * 1024, host_bytes: STORAGE_LIMITS.host_bytes });
  });

  it("storage.mailbox_bytes: once one topic holds the relay's total, a second topic's POST within its own quota is refused 507 storage_full; /status.json shows the total reached", async () => {
    const first = topic("first");
    for (let i = 0; i < 2; i++) expect((await fetch(first, { method: "POST", body: "a".repeat(40_000) })).status).toBe(201);
    const refused = await fetch(topic("second"), { method: "POST", body: "b".repeat(30_000) });
    expect(refused.status).toBe(507);
    expect(((await refused.json()) as any).error).toMatchObject({ code: "storage_full" });
    const status = await waitFor(async () => {
      const s = (await (await fetch(`${relay.url}/status.json`)).json()) as any;
      return s.storage.mailbox.reserved_bytes > 0 ? s : null;
    });
    expect(status.storage.mailbox).toMatchObject({ total_bytes: TOTAL, holders: 1 });
    expect(status.storage.mailbox.reserved_bytes).toBeGreaterThanOrEqual(80_000);
    expect(status.storage.mailbox.reserved_bytes).toBeLessThanOrEqual(TOTAL);
    expect(status.storage.tally).toMatchObject({ reserved_bytes: 0, total_bytes: 1024 * 1024 });
  });

  it("storage slack is lent, never kept: with one topic holding most of the total, a one-byte POST to a fresh topic is still stored from the room left after what is held", async () => {
    // 80,000 bytes and a database of the 240 KiB are held by the first topic (above), whose lease took the rest as slack.
    expect((await fetch(topic("tiny"), { method: "POST", body: "x" })).status).toBe(201);
    // past what is held, still refused
    expect((await fetch(topic("past"), { method: "POST", body: "y".repeat(20_000) })).status).toBe(507);
  });
});
