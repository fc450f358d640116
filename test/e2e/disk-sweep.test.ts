// Self-hosted, a name that keeps nothing leaves nothing on disk (docs/operating.md, "Disk"): the
// runtime makes an empty SQLite database for every object a request reaches, and the launcher
// removes those of objects that are not live, every sweep interval and at start. The numbers are
// lower than an attacker's (hundreds of names, not thousands); the sweep interval is 1 s here.
import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { relayTarget, startRelay, type RelayProcess } from "../helpers/relay-process";
import { waitFor } from "../helpers/wait";

const relays: RelayProcess[] = [];
afterEach(async () => {
  for (const r of relays.splice(0)) await r.stop({ kill: true });
});

/** The databases of mailbox topics and spaces (each `<id>.sqlite`; its -wal and -shm go with it). */
function objectFiles(dataDir: string): string[] {
  return readdirSync(dataDir, { recursive: true })
    .map(String)
    .filter((f) => /Minca(Mailbox|Space)\/[0-9a-f]{64}\.sqlite$/.test(f));
}

const topic = () => `sweep_${randomBytes(12).toString("hex")}`;
const spaceId = () => `b${[...randomBytes(52)].map((b) => "abcdefghijklmnopqrstuvwxyz234567"[b % 32]).join("")}`;

/** GETs of `n` made-up mailbox topics and spaces, 25 at a time. */
async function unknownNames(url: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 25) {
    await Promise.all(
      Array.from({ length: Math.min(25, n - i) }, async (_, j) => {
        const path = (i + j) % 2 ? `/minca/v1/mailbox/${topic()}` : `/minca/v1/spaces/${spaceId()}/versions`;
        const res = await fetch(`${url}${path}`);
        await res.arrayBuffer();
        expect(res.status).toBeLessThan(500);
      }),
    );
  }
}

describe.skipIf(relayTarget() !== "workerd")("the sweep of empty databases (npm start)", () => {
  it("requests to hundreds of made-up names leave no file once their objects are gone, and none after a restart; a topic that stores an item keeps its file", async () => {
    const relay = await startRelay({ env: { RELAY_SWEEP_INTERVAL: "1" } });
    relays.push(relay);
    const kept = topic();
    const stored = await fetch(`${relay.url}/minca/v1/mailbox/${kept}`, { method: "POST", body: "keep me" });
    expect(stored.status).toBe(201);
    // The stored topic's database.
    const before = new Set(objectFiles(relay.dataDir));

    await unknownNames(relay.url, 150);
    // The attack: a database for every name (those already evicted and swept aside).
    expect(objectFiles(relay.dataDir).length).toBeGreaterThan(before.size);
    // The runtime evicts an idle object after some seconds; the next sweep then removes its files.
    await waitFor(() => objectFiles(relay.dataDir).filter((f) => !before.has(f)).length === 0, {
      timeout: 60_000,
      interval: 250,
      what: "the empty databases to be swept",
    });
    // The launcher's line about it comes through a pipe, so it may follow the files' going.
    await waitFor(() => relay.output().includes("removed the empty databases"), { what: "the sweep's log line" });

    // A crash right after more requests: the next start removes what the last run left.
    await unknownNames(relay.url, 50);
    await relay.stop({ kill: true });
    relays.splice(0);
    const again = await startRelay({ dataDir: relay.dataDir, env: { RELAY_SWEEP_INTERVAL: "0" } });
    relays.push(again);
    expect(objectFiles(again.dataDir).filter((f) => !before.has(f))).toEqual([]);
    const page = await fetch(`${again.url}/minca/v1/mailbox/${kept}`);
    expect(page.status).toBe(200);
    expect(JSON.stringify(await page.json())).toContain(Buffer.from("keep me").toString("base64url"));
  }, 120_000);
});
