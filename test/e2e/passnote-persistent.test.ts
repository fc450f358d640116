// A device on a SQLite database, in its own process, killed with SIGKILL mid-sync and reopened
// from its database, through the real relay: both devices converge with nothing lost and nothing
// duplicated. PASSNOTE_E2E_RECORDS sets the records each side writes (default 10,000, the figure
// the rule is stated for: about 25 s on the loaded 2-core machine; fewer for a quick local run).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { PassnotePeer } from "../../clients/passnote/peer";
import { RelayTransport } from "../../clients/passnote/relay-transport";
import { bytesToHex } from "../../shared/encoding";
import { devicePublicKey, foundGroup, newDeviceKey } from "../../shared/passnote/roster";
import { digest } from "../helpers/passnote-data";
import { waitFor } from "../helpers/wait";

const relayUrl = inject("relayUrl").replace(/^http/, "ws");
const RECORDS = Number(process.env.PASSNOTE_E2E_RECORDS ?? 10_000);
let child = "";
// The device's program, bundled once: each process then starts in a fraction of a second.
beforeAll(async () => {
  child = join(mkdtempSync(join(tmpdir(), "passnote-child-")), "device.mjs");
  await build({
    entryPoints: [new URL("../helpers/passnote-peer-child.ts", import.meta.url).pathname],
    outfile: child,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node22",
    logLevel: "warning",
  });
});
const running: ChildProcess[] = [];
const closing: Array<{ close(): void }> = [];
afterEach(() => {
  for (const c of running.splice(0)) c.kill("SIGKILL");
  for (const c of closing.splice(0)) c.close();
});

/** A device process; its lines as they come, and a way to wait for one. */
function device(db: string, identityJson?: string) {
  const p = spawn(process.execPath, ["--no-warnings", child, relayUrl, db, String(RECORDS), ...(identityJson ? [identityJson] : [])], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.push(p);
  const lines: string[] = [];
  let buf = "";
  let err = "";
  p.stdout!.on("data", (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split("\n");
    buf = parts.pop()!;
    lines.push(...parts);
  });
  p.stderr!.on("data", (d) => (err += d));
  const have = () => {
    const last = lines.filter((l) => l.startsWith("have ")).pop();
    return last ? Number(last.slice(5)) : 0;
  };
  return { p, lines, have, stderr: () => err, digest: () => lines.find((l) => l.startsWith("digest "))?.slice(7) };
}

describe("the Passnote protocol with a persistent store: a device killed mid-sync and reopened from its database", () => {
  it(`two devices write ${RECORDS.toLocaleString("en")} records each; one is killed with SIGKILL mid-sync and reopened; both converge, nothing lost, nothing duplicated`, async () => {
    const owner = foundGroup();
    const bob = { group: owner.group, deviceKey: newDeviceKey() };
    const ta = await RelayTransport.connect({ relayUrl, rosterKey: owner.group.rosterKey });
    const a = new PassnotePeer({ transport: ta, identity: owner, antiEntropyIntervalMs: 2_000 });
    closing.push(a);
    a.admit(devicePublicKey(bob.deviceKey));
    for (let i = 0; i < RECORDS; i++) a.put("notes", `a${i}`, { from: "a", i });
    const started = performance.now();

    const db = join(mkdtempSync(join(tmpdir(), "passnote-e2e-")), "bob.db");
    const hex = (b: Uint8Array) => bytesToHex(b);
    const first = device(
      db,
      JSON.stringify({
        deviceKey: hex(bob.deviceKey),
        rosterKey: hex(owner.group.rosterKey),
        groupKey: hex(owner.group.groupKey),
        owner: hex(owner.group.owner),
      }),
    );
    await waitFor(() => first.lines.includes("written"), {
      timeout: 30_000,
      what: `bob's ${RECORDS} writes acknowledged (${first.stderr()})`,
    });
    // Mid-sync: bob holds some of alice's records, not all.
    await waitFor(() => first.have() > RECORDS || first.p.exitCode !== null, { timeout: 30_000, what: "sync under way" });
    first.p.kill("SIGKILL");
    await new Promise((r) => first.p.once("exit", r));
    const atKill = first.have();
    expect(atKill).toBeLessThan(2 * RECORDS); // killed before it was done

    // Reopened from its database alone (no keys given): the records, keys and clock come back.
    const second = device(db);
    await waitFor(() => second.digest() !== undefined && a.store.size("notes") === 2 * RECORDS, {
      timeout: 60_000,
      what: `convergence (bob has ${second.have()}, alice ${a.store.size("notes")}) ${second.stderr()}`,
    });
    const ms = Math.round(performance.now() - started);
    console.log(`passnote persistent store, ${RECORDS} records each, bob killed at ${atKill}: converged in ${ms} ms`);
    // Nothing lost, nothing duplicated: each side holds exactly the 2 × RECORDS documents, the same ones.
    expect(a.store.size("notes")).toBe(2 * RECORDS);
    expect(second.digest()).toBe(digest(a.store));
    for (let i = 0; i < RECORDS; i++) expect(a.get("notes", `b${i}`)).toEqual({ from: "b", i });
  }, 180_000); // the waits above (30 s, 30 s, 60 s) and the two process starts
});
